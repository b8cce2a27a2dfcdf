import { Inject, Injectable } from '@nestjs/common';
import type { FleetRowView, FleetView, HealthStatus } from '@flotilla/contract';
import { asRecord } from '../common/json.js';
import { HUB_CONFIG, type HubConfig } from '../config/hub-config.js';
import { Database } from '../db/database.js';
import { SYNC_STATUS_SELECT, syncStatusOf } from '../desired-state/sync-status.js';
import {
  fleetCounts,
  groupByCluster,
  labelMatcher,
  pageAfter,
  targetMatches,
  type FleetCluster,
  type FleetQuery,
} from './fleet-filter.js';
import { REASON_INCLUDE, TargetReasons } from './target-reasons.service.js';

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
    const needle = q.q?.toLowerCase() ?? '';
    const { clusters, everyCluster } = await this.filteredClusters(q, now);
    const targets = await this.filteredTargets(q, clusters, everyCluster);
    const clusterById = new Map(clusters.map((c) => [c.id, c]));
    const matched = targets.filter((t) => targetMatches(q.status, needle, t, clusterById.get(t.clusterId)));
    const byCluster = groupByCluster(matched);
    const targetFilters = Boolean(q.appSet || q.project || (q.status && q.status !== 'Offline'));
    // A cluster with nothing deployed is still part of the fleet, unless a filter asks for targets.
    const rowsAll = clusters.filter(
      (c) => byCluster.has(c.id) || (!targetFilters && (!needle || c.name.toLowerCase().includes(needle))),
    );
    const { page, nextCursor } = pageAfter(rowsAll, q.cursor, q.limit);
    return {
      appSets: [...new Set(matched.map((t) => t.appSet.name))].sort(),
      rows: await this.pageRows(page, byCluster, now),
      counts: fleetCounts(rowsAll, matched),
      nextCursor,
      at: now.toISOString(),
    };
  }

  /** Every cluster the selector and the Offline filter let through, and whether that is all of them. */
  private async filteredClusters(q: FleetQuery, now: Date) {
    const matchesLabels = labelMatcher(q.selector);
    const offlineBefore = now.getTime() - this.config.rollouts.offlineAfterSeconds * 1000;
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
    return { clusters, everyCluster: clusters.length === allClusters.length };
  }

  /** The targets on those clusters of the appset and project asked for: cheap columns only. */
  private async filteredTargets(q: FleetQuery, clusters: { id: string }[], everyCluster: boolean) {
    const targets = await this.db.prisma.target.findMany({
      where: {
        // Every cluster matches (no selector, no Offline filter): a thousand bound ids say nothing.
        ...(!everyCluster && { clusterId: { in: clusters.map((c) => c.id) } }),
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
    return targets.map((t) => ({ ...t, sync: syncStatusOf(t) }));
  }

  /** The page's rows, each cell with its one current reason (computed for the page's targets alone). */
  private async pageRows(
    page: (FleetCluster & { labels: Record<string, string>; lastSeenAt: Date | null })[],
    byCluster: Map<string, { id: string }[]>,
    now: Date,
  ): Promise<FleetRowView[]> {
    const pageIds = page.flatMap((c) => (byCluster.get(c.id) ?? []).map((t) => t.id));
    const full = await this.db.prisma.target.findMany({
      where: { id: { in: pageIds } },
      include: REASON_INCLUDE,
      orderBy: { name: 'asc' },
    });
    const reasons = await this.reasons.of(full, now);
    const fullByCluster = groupByCluster(full);
    return page.map((c) => ({
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
  }
}
