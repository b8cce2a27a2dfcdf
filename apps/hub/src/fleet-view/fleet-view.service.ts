import { Inject, Injectable } from '@nestjs/common';
import type { FleetRowView, FleetView, HealthStatus } from '@flotilla/contract';
import { asRecord } from '../common/json.js';
import { HUB_CONFIG, type HubConfig } from '../config/hub-config.js';
import { Database } from '../db/database.js';
import { Prisma } from '../generated/prisma/client.js';
import {
  SYNC_FACTS_SQL,
  syncStatusFrom,
  syncStatusOf,
  type SyncFacts,
} from '../desired-state/sync-status.js';
import {
  fleetCounts,
  groupByCluster,
  labelMatcher,
  pageOfClusters,
  targetMatches,
  type FleetCluster,
  type FleetQuery,
  type TargetSummary,
} from './fleet-filter.js';
import { REASON_INCLUDE, TargetReasons } from './target-reasons.service.js';

type ViewCluster = FleetCluster & { labels: Record<string, string>; lastSeenAt: Date | null };

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
    const [{ clusters, everyCluster }, appSets] = await Promise.all([
      this.filteredClusters(q, now),
      this.db.prisma.applicationSet.findMany({ select: { id: true, name: true, project: true } }),
    ]);
    const appSetById = new Map(appSets.map((a) => [a.id, a]));
    const appSetIds =
      q.appSet || q.project
        ? appSets
            .filter((a) => (!q.appSet || a.name === q.appSet) && (!q.project || a.project === q.project))
            .map((a) => a.id)
        : null;
    const targets = await this.targetSummaries({
      // Every cluster matches (no selector, no Offline filter): a thousand ids say nothing.
      clusterIds: everyCluster ? null : clusters.map((c) => c.id),
      appSetIds,
      withNames: Boolean(needle),
    });
    const clusterById = new Map(clusters.map((c) => [c.id, c]));
    const matched = targets.filter((t) =>
      targetMatches(q.status, needle, t, clusterById.get(t.clusterId), appSetById.get(t.appSetId)?.name),
    );
    const byCluster = groupByCluster(matched);
    const targetFilters = Boolean(q.appSet || q.project || (q.status && q.status !== 'Offline'));
    // A cluster with nothing deployed is still part of the fleet, unless a filter asks for targets.
    const rowsAll = clusters.filter(
      (c) => byCluster.has(c.id) || (!targetFilters && (!needle || c.name.toLowerCase().includes(needle))),
    );
    const { page, nextCursor } = pageOfClusters(rowsAll, q);
    return {
      appSets: [...new Set(matched.map((t) => appSetById.get(t.appSetId)?.name ?? ''))].sort(),
      rows: await this.pageRows(page, byCluster, appSetIds, now),
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
    const clusters: ViewCluster[] = allClusters
      .map((c) => ({
        ...c,
        labels: asRecord(c.labels),
        online: c.lastSeenAt !== null && c.lastSeenAt.getTime() >= offlineBefore,
      }))
      .filter((c) => matchesLabels(c.labels))
      .filter((c) => q.status !== 'Offline' || !c.online);
    return { clusters, everyCluster: clusters.length === allClusters.length };
  }

  /**
   * Every target the filters may keep, as little as the filters and counts need: ids, health and
   * sync status, the facts of which PostgreSQL computes (SYNC_FACTS_SQL). Reading whole rows with
   * their appset and comparison through Prisma took most of a second at 10,000 targets; this is a
   * tenth of that. Names only for a text filter, which matches them as the rest of the view does.
   */
  private async targetSummaries(f: {
    clusterIds: string[] | null;
    appSetIds: string[] | null;
    withNames: boolean;
  }): Promise<TargetSummary[]> {
    const where: Prisma.Sql[] = [];
    if (f.clusterIds) where.push(Prisma.sql`t."clusterId" = ANY(${f.clusterIds}::text[])`);
    if (f.appSetIds) where.push(Prisma.sql`t."appSetId" = ANY(${f.appSetIds}::text[])`);
    const rows = await this.db.prisma.$queryRaw<(SyncFacts & Omit<TargetSummary, 'syncStatus'>)[]>`
      SELECT t."id", t."clusterId", t."appSetId", t."health",
             ${f.withNames ? Prisma.sql`t."name",` : Prisma.empty}
             ${SYNC_FACTS_SQL}
        FROM "Target" t
        LEFT JOIN "TargetComparison" c ON c."targetId" = t."id"
       ${where.length > 0 ? Prisma.sql`WHERE ${Prisma.join(where, ' AND ')}` : Prisma.empty}`;
    return rows.map((r) => ({
      id: r.id,
      clusterId: r.clusterId,
      appSetId: r.appSetId,
      health: r.health,
      name: r.name,
      syncStatus: syncStatusFrom(r),
    }));
  }

  /** The page's rows, each cell with its one current reason (computed for the page's targets alone). */
  private async pageRows(
    page: ViewCluster[],
    byCluster: Map<string, { id: string }[]>,
    appSetIds: string[] | null,
    now: Date,
  ): Promise<FleetRowView[]> {
    // Asked by the page's clusters (and appsets), not by the ids of its targets: Prisma spends three
    // times the CPU on 500 bound ids than on 50; a status or text filter's leftovers are dropped here.
    const pageIds = new Set(page.flatMap((c) => (byCluster.get(c.id) ?? []).map((t) => t.id)));
    const full = (
      await this.db.prisma.target.findMany({
        where: {
          clusterId: { in: page.map((c) => c.id) },
          ...(appSetIds && { appSetId: { in: appSetIds } }),
        },
        include: REASON_INCLUDE,
        orderBy: { name: 'asc' },
      })
    ).filter((t) => pageIds.has(t.id));
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
