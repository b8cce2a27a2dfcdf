// The fleet matrix's filters, counts and paging over cheap columns, as plain functions of the query and rows.
import {
  FLEET_STATUS_FILTERS,
  HEALTH_STATUSES,
  SYNC_STATUSES,
  type FleetCountsView,
  type HealthStatus,
  type SyncStatus,
} from '@flotilla/contract';
import { compileSelector, LabelSelectorError, parseSelectorText } from '@flotilla/labels';
import { z } from 'zod';
import { HubError } from '../common/hub-error.js';

export const fleetQuery = z.object({
  /** A label selector over cluster labels, as `kubectl -l` takes it. */
  selector: z.string().max(2000).optional(),
  appSet: z.string().max(253).optional(),
  project: z.string().max(253).optional(),
  status: z.enum(FLEET_STATUS_FILTERS).optional(),
  /** Free text: a cluster, target or appset name containing it (case-insensitive). */
  q: z.string().max(200).optional(),
  limit: z.coerce.number().int().min(1).max(200).default(50),
  /** The last cluster name of the previous page. */
  cursor: z.string().max(253).optional(),
  /**
   * Instead of a cursor: how many matching clusters to skip. For a client that shows the whole
   * fleet as one scrolled list and asks for the rows that come into view, wherever the person
   * scrolls to. Rows added or removed meanwhile shift it by as many; the next refetch says so.
   */
  offset: z.coerce.number().int().min(0).max(1_000_000).optional(),
});
export type FleetQuery = z.infer<typeof fleetQuery>;

/** A cluster as the filters see it. */
export interface FleetCluster {
  id: string;
  name: string;
  online: boolean;
}

/** One target as the fleet view's filters and counts see it. */
export interface TargetSummary {
  id: string;
  clusterId: string;
  appSetId: string;
  health: string;
  /** Only when a text filter asked for it. */
  name?: string;
  syncStatus: SyncStatus;
}

/** The query's label selector as a predicate (400 when it does not parse); no selector matches all. */
export function labelMatcher(selector: string | undefined): (labels: Record<string, string>) => boolean {
  if (!selector) return () => true;
  try {
    return compileSelector(parseSelectorText(selector, 'query.selector'), 'query.selector');
  } catch (e) {
    if (e instanceof LabelSelectorError)
      throw new HubError(400, 'invalid-request', e.message, 'query.selector');
    throw e;
  }
}

/** Whether a target passes the status filter (its sync status or health) and the free-text needle. */
export function targetMatches(
  status: FleetQuery['status'],
  needle: string,
  t: TargetSummary,
  cluster: FleetCluster | undefined,
  appSetName: string | undefined,
): boolean {
  if (status && status !== 'Offline' && t.syncStatus !== status && t.health !== status) return false;
  if (!needle) return true;
  return (
    (cluster?.name.toLowerCase().includes(needle) ?? false) ||
    (t.name?.toLowerCase().includes(needle) ?? false) ||
    (appSetName?.toLowerCase().includes(needle) ?? false)
  );
}

export function groupByCluster<T extends { clusterId: string }>(targets: T[]): Map<string, T[]> {
  const byCluster = new Map<string, T[]>();
  for (const t of targets) {
    const list = byCluster.get(t.clusterId) ?? [];
    list.push(t);
    byCluster.set(t.clusterId, list);
  }
  return byCluster;
}

/** Counts over every row and matched target, so they agree on every page. */
export function fleetCounts(rows: FleetCluster[], matched: TargetSummary[]): FleetCountsView {
  const counts: FleetCountsView = {
    clusters: rows.length,
    offlineClusters: rows.filter((c) => !c.online).length,
    targets: matched.length,
    sync: Object.fromEntries(SYNC_STATUSES.map((s) => [s, 0])) as Record<SyncStatus, number>,
    health: Object.fromEntries(HEALTH_STATUSES.map((s) => [s, 0])) as Record<HealthStatus, number>,
  };
  for (const t of matched) {
    counts.sync[t.syncStatus]++;
    const health = (HEALTH_STATUSES as readonly string[]).includes(t.health) ? t.health : 'Unknown';
    counts.health[health as HealthStatus]++;
  }
  return counts;
}

/**
 * One page of clusters: from `offset`, or after the cursor (the previous page's last name); and the
 * cursor of the next page.
 */
export function pageOfClusters<C extends { name: string }>(
  rows: C[],
  q: Pick<FleetQuery, 'offset' | 'cursor' | 'limit'>,
): { page: C[]; nextCursor: string | null } {
  const from =
    q.offset !== undefined
      ? q.offset
      : q.cursor === undefined
        ? 0
        : rows.findIndex((c) => c.name > (q.cursor ?? ''));
  const page = from < 0 ? [] : rows.slice(from, from + q.limit);
  const last = page.at(-1);
  const hasMore = from >= 0 && from + q.limit < rows.length;
  return { page, nextCursor: hasMore && last ? last.name : null };
}
