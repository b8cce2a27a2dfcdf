// The fleet matrix's filters, counts and paging over cheap columns, as plain functions of the query and rows.
import {
  FLEET_STATUS_FILTERS,
  HEALTH_STATUSES,
  SYNC_STATUSES,
  type FleetCountsView,
  type HealthStatus,
  type SyncStatus,
} from '@flotilla/contract';
import { compileSelector, GeneratorError, parseSelectorText } from '@flotilla/generators';
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
});
export type FleetQuery = z.infer<typeof fleetQuery>;

/** A cluster as the filters see it. */
export interface FleetCluster {
  id: string;
  name: string;
  online: boolean;
}

/** A target as the filters see it: its sync status already derived. */
export interface FleetTarget {
  name: string;
  clusterId: string;
  health: string;
  sync: SyncStatus;
  appSet: { name: string };
}

/** The query's label selector as a predicate (400 when it does not parse); no selector matches all. */
export function labelMatcher(selector: string | undefined): (labels: Record<string, string>) => boolean {
  if (!selector) return () => true;
  try {
    return compileSelector(parseSelectorText(selector, 'query.selector'), 'query.selector');
  } catch (e) {
    if (e instanceof GeneratorError) throw new HubError(400, 'invalid-request', e.message, 'query.selector');
    throw e;
  }
}

/** Whether a target passes the status filter (its sync status or health) and the free-text needle. */
export function targetMatches(
  status: FleetQuery['status'],
  needle: string,
  t: FleetTarget,
  cluster: FleetCluster | undefined,
): boolean {
  if (status && status !== 'Offline' && t.sync !== status && t.health !== status) return false;
  if (!needle) return true;
  return (
    (cluster?.name.toLowerCase().includes(needle) ?? false) ||
    t.name.toLowerCase().includes(needle) ||
    t.appSet.name.toLowerCase().includes(needle)
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
export function fleetCounts(rows: FleetCluster[], matched: FleetTarget[]): FleetCountsView {
  const counts: FleetCountsView = {
    clusters: rows.length,
    offlineClusters: rows.filter((c) => !c.online).length,
    targets: matched.length,
    sync: Object.fromEntries(SYNC_STATUSES.map((s) => [s, 0])) as Record<SyncStatus, number>,
    health: Object.fromEntries(HEALTH_STATUSES.map((s) => [s, 0])) as Record<HealthStatus, number>,
  };
  for (const t of matched) {
    counts.sync[t.sync]++;
    const health = (HEALTH_STATUSES as readonly string[]).includes(t.health) ? t.health : 'Unknown';
    counts.health[health as HealthStatus]++;
  }
  return counts;
}

/** The clusters after the cursor (the previous page's last name), and the cursor of the next page. */
export function pageAfter<C extends { name: string }>(
  rows: C[],
  cursor: string | undefined,
  limit: number,
): { page: C[]; nextCursor: string | null } {
  const from = cursor === undefined ? 0 : rows.findIndex((c) => c.name > cursor);
  const page = from < 0 ? [] : rows.slice(from, from + limit);
  const last = page.at(-1);
  const hasMore = from >= 0 && from + limit < rows.length;
  return { page, nextCursor: hasMore && last ? last.name : null };
}
