import { Inject, Injectable } from '@nestjs/common';
import {
  FLEET_STATUS_FILTERS,
  HEALTH_STATUSES,
  SYNC_STATUSES,
  type FleetCountsView,
  type FleetRowView,
  type FleetView,
  type HealthStatus,
  type SyncStatus,
} from '@flotilla/contract';
import { compileSelector, LabelSelectorError, parseSelectorText } from '@flotilla/labels';
import { z } from 'zod';
import { asRecord } from '../common/json.js';
import { HubError } from '../common/hub-error.js';
import { HUB_CONFIG, type HubConfig } from '../config/hub-config.js';
import { Database } from '../db/database.js';
import { SYNC_STATUS_SELECT, syncStatusOf } from '../desired-state/sync-status.js';
import { REASON_INCLUDE, TargetReasons } from './target-reasons.service.js';

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

/**
 * The fleet matrix, filtered and paged on the hub. Filters are applied to every cluster and target
 * (cheap columns only), so counts agree on every page; the one current reason, which costs more
 * queries, is computed for the page's targets alone. Pages are clusters in name order, each with all
 * of its matching targets, and never skip or repeat a cluster.
 */
@Injectable()
export class FleetViewService {
  constructor(
    private readonly db: Database,
    private readonly reasons: TargetReasons,
    @Inject(HUB_CONFIG) private readonly config: HubConfig,
  ) {}

  async view(q: FleetQuery, now = new Date()): Promise<FleetView> {
    let matchesLabels: (labels: Record<string, string>) => boolean = () => true;
    if (q.selector) {
      try {
        matchesLabels = compileSelector(parseSelectorText(q.selector, 'query.selector'), 'query.selector');
      } catch (e) {
        if (e instanceof LabelSelectorError)
          throw new HubError(400, 'invalid-request', e.message, 'query.selector');
        throw e;
      }
    }
    const offlineBefore = now.getTime() - this.config.rollouts.offlineAfterSeconds * 1000;
    const needle = q.q?.toLowerCase() ?? '';
    const allClusters = await this.db.prisma.cluster.findMany({
      select: { id: true, name: true, labels: true, lastSeenAt: true },
      orderBy: { name: 'asc' },
    });
    const clusters = allClusters
      .map((c) => ({
        ...c,
        labels: asRecord(c.labels),
        online: c.lastSeenAt !== null && c.lastSeenAt.getTime() >= offlineBefore,
      }))
      .filter((c) => matchesLabels(c.labels))
      .filter((c) => q.status !== 'Offline' || !c.online);

    const targets = await this.db.prisma.target.findMany({
      where: {
        // Every cluster matches (no selector, no Offline filter): a thousand bound ids say nothing.
        ...(clusters.length < allClusters.length && { clusterId: { in: clusters.map((c) => c.id) } }),
        ...(q.appSet || q.project
          ? { appSet: { ...(q.appSet && { name: q.appSet }), ...(q.project && { project: q.project }) } }
          : {}),
      },
      select: {
        id: true,
        name: true,
        clusterId: true,
        health: true,
        ...SYNC_STATUS_SELECT,
        appSet: { select: { name: true } },
      },
      orderBy: { name: 'asc' },
    });
    const clusterById = new Map(clusters.map((c) => [c.id, c]));
    const targetFilters = Boolean(q.appSet || q.project || (q.status && q.status !== 'Offline'));
    const matched = targets.filter((t) => {
      const sync = syncStatusOf(t);
      if (q.status && q.status !== 'Offline' && sync !== q.status && t.health !== q.status) return false;
      if (!needle) return true;
      const cluster = clusterById.get(t.clusterId);
      return (
        (cluster?.name.toLowerCase().includes(needle) ?? false) ||
        t.name.toLowerCase().includes(needle) ||
        t.appSet.name.toLowerCase().includes(needle)
      );
    });
    const byCluster = new Map<string, typeof matched>();
    for (const t of matched) {
      const list = byCluster.get(t.clusterId) ?? [];
      list.push(t);
      byCluster.set(t.clusterId, list);
    }
    // A cluster with nothing deployed is still part of the fleet, unless a filter asks for targets.
    const rowsAll = clusters.filter(
      (c) => byCluster.has(c.id) || (!targetFilters && (!needle || c.name.toLowerCase().includes(needle))),
    );

    const counts: FleetCountsView = {
      clusters: rowsAll.length,
      offlineClusters: rowsAll.filter((c) => !c.online).length,
      targets: matched.length,
      sync: Object.fromEntries(SYNC_STATUSES.map((s) => [s, 0])) as Record<SyncStatus, number>,
      health: Object.fromEntries(HEALTH_STATUSES.map((s) => [s, 0])) as Record<HealthStatus, number>,
    };
    for (const t of matched) {
      counts.sync[syncStatusOf(t)]++;
      const health = (HEALTH_STATUSES as readonly string[]).includes(t.health) ? t.health : 'Unknown';
      counts.health[health as HealthStatus]++;
    }

    const from = q.cursor === undefined ? 0 : rowsAll.findIndex((c) => c.name > (q.cursor ?? ''));
    const page = from < 0 ? [] : rowsAll.slice(from, from + q.limit);
    const last = page.at(-1);
    const hasMore = from >= 0 && from + q.limit < rowsAll.length;

    const pageIds = page.flatMap((c) => (byCluster.get(c.id) ?? []).map((t) => t.id));
    const full = await this.db.prisma.target.findMany({
      where: { id: { in: pageIds } },
      include: REASON_INCLUDE,
      orderBy: { name: 'asc' },
    });
    const reasons = await this.reasons.of(full, now);
    const fullByCluster = new Map<string, typeof full>();
    for (const t of full) {
      const list = fullByCluster.get(t.clusterId) ?? [];
      list.push(t);
      fullByCluster.set(t.clusterId, list);
    }
    const rows: FleetRowView[] = page.map((c) => ({
      cluster: c.name,
      labels: c.labels,
      online: c.online,
      lastSeenAt: c.lastSeenAt?.toISOString() ?? null,
      cells: (fullByCluster.get(c.id) ?? []).map((t) => ({
        target: t.name,
        appSet: t.appSet.name,
        project: t.appSet.project,
        syncStatus: syncStatusOf(t),
        health: t.health as HealthStatus,
        desiredRevision: t.desiredRevision,
        lastSyncedRevision: t.lastSyncedRevision,
        reason: reasons.get(t.id) ?? null,
        automated: (t.syncPolicy as { automated?: unknown } | null)?.automated !== false,
        stale: !c.online,
      })),
    }));
    return {
      appSets: [...new Set(matched.map((t) => t.appSet.name))].sort(),
      rows,
      counts,
      nextCursor: hasMore && last ? last.name : null,
      at: now.toISOString(),
    };
  }
}
