import { Controller, Get, Param, Query, StreamableFile, UseGuards } from '@nestjs/common';
import { ApiBearerAuth, ApiParam, ApiQuery, ApiTags } from '@nestjs/swagger';
import {
  syncRunCsvHeader,
  syncRunCsvRow,
  syncRunPageViewSchema,
  targetDiffViewSchema,
  targetListingSchema,
  type HealthStatus,
  type ObjectComparison,
  type Page,
  type SyncRunPageView,
  type TargetDiffView,
  type TargetListItemView,
  type TargetReason,
  type TargetSourceView,
} from '@flotilla/contract';
import { exportFile, exportLines } from '../common/record-export.js';
import { z } from 'zod';
import { AdminTokenGuard } from '../auth/admin-token.guard.js';
import { HubError, parseInput } from '../common/hub-error.js';
import { Database } from '../db/database.js';
import { comparisonIsCurrent, syncStatusOf } from '../desired-state/sync-status.js';
import { HISTORY_PAGE, SyncHistory, syncHistoryQuery } from '../history/sync-history.service.js';
import { REASON_INCLUDE, TargetReasons, type ReasonTarget } from './target-reasons.service.js';
import { ApiPageQuery, isPaged, pageArgs, pageOf, pageQueryFields } from '../common/name-page.js';
import { ApiAnswer } from '../common/api-docs.js';

/** `format=ndjson|csv` streams every match (at most `limit` when given) instead of one page. */
const syncRunsQuery = syncHistoryQuery.extend({
  limit: z.coerce.number().int().min(1).max(500).optional(),
  format: z.enum(['json', 'ndjson', 'csv']).default('json'),
});

const targetsQuery = z.object({
  name: z.string().optional(),
  cluster: z.string().optional(),
  appSet: z.string().optional(),
  ...pageQueryFields,
});

@ApiTags('targets')
@ApiBearerAuth()
@UseGuards(AdminTokenGuard)
@Controller('api/v1')
export class TargetsController {
  constructor(
    private readonly db: Database,
    private readonly history: SyncHistory,
    private readonly reasons: TargetReasons,
  ) {}

  @Get('targets')
  @ApiQuery({ name: 'name', required: false, description: 'one target by name' })
  @ApiQuery({ name: 'cluster', required: false })
  @ApiQuery({ name: 'appSet', required: false })
  @ApiPageQuery()
  @ApiAnswer(targetListingSchema)
  async targets(@Query() query: unknown): Promise<TargetListItemView[] | Page<TargetListItemView>> {
    const q = parseInput(targetsQuery, query, 'query');
    const paged = isPaged(q);
    const page = paged ? pageArgs(q) : undefined;
    const read = await this.db.prisma.target.findMany({
      where: {
        ...(q.name ? { name: q.name } : {}),
        ...(q.cluster ? { cluster: { name: q.cluster } } : {}),
        ...(q.appSet ? { appSet: { name: q.appSet } } : {}),
        ...(page && { AND: [page.where] }),
      },
      orderBy: { name: 'asc' },
      include: REASON_INCLUDE,
      ...(page && { take: page.take }),
    });
    const shown = paged ? pageOf(read, q) : { rows: read, nextCursor: null };
    const items = await this.targetItems(shown.rows);
    return paged ? { items, nextCursor: shown.nextCursor } : items;
  }

  private async targetItems(rows: ReasonTarget[]): Promise<TargetListItemView[]> {
    const reasons = await this.reasons.of(rows);
    return rows.map((t) => ({
      id: t.id,
      name: t.name,
      cluster: t.cluster.name,
      appSet: t.appSet.name,
      namespace: t.namespace,
      repoUrl: t.repoUrl,
      path: t.sourcePath,
      targetRevision: t.targetRevision,
      desiredRevision: t.desiredRevision,
      sources: (t.sources as TargetSourceView[] | null) ?? null,
      bundleDigest: t.bundleDigest,
      // What the agent is given: the release (a rollout may hold it back), or a pin that overrides it.
      releasedRevision: t.releasedRevision,
      pin: t.pin
        ? {
            revision: t.pin.revision,
            reason: t.pin.reason,
            actor: t.pin.actor,
            expiresAt: t.pin.expiresAt?.toISOString() ?? null,
          }
        : null,
      syncPolicy: t.syncPolicy,
      syncStatus: syncStatusOf(t),
      health: t.health as HealthStatus,
      healthMessage: t.healthMessage,
      lastSyncedRevision: t.lastSyncedRevision,
      lastSyncedAt: t.lastSyncedAt?.toISOString() ?? null,
      lastReportAt: t.lastReportAt?.toISOString() ?? null,
      /** The one current reason it is not Synced and Healthy at the wanted revision (null: it is). */
      reason: reasons.get(t.id) ?? null,
      stale: staleOf(reasons.get(t.id)),
    }));
  }

  /**
   * What a sync would change on the target's cluster, object by object, as a unified diff per object
   * (`kubectl diff`'s form, Secret values masked), from the agent's latest comparison. `current`
   * is false when that comparison is of another revision or bundle than the one Git wants now, or
   * older than the last successful sync.
   */
  @Get('targets/:name/diff')
  @ApiParam({ name: 'name', description: 'the target' })
  @ApiAnswer(targetDiffViewSchema)
  async diff(@Param('name') name: string): Promise<TargetDiffView> {
    const t = await this.db.prisma.target.findUnique({
      where: { name },
      include: { cluster: { select: { name: true } }, comparison: true },
    });
    if (!t) throw HubError.notFound('target', name);
    const c = t.comparison;
    return {
      target: t.name,
      cluster: t.cluster.name,
      desiredRevision: t.desiredRevision,
      bundleDigest: t.bundleDigest,
      syncStatus: syncStatusOf(t),
      comparison: c
        ? {
            observedAt: c.observedAt.toISOString(),
            revision: c.revision,
            bundleDigest: c.bundleDigest,
            current: comparisonIsCurrent(t, c),
            inSync: c.inSync,
            compared: c.compared,
            truncated: c.truncated,
            // Stored as the contract parsed it at ingest.
            objects: c.objects as ObjectComparison[],
          }
        : null,
    };
  }

  /**
   * Sync history, newest first: every attempt (trigger auto, manual, self-heal, rollback; outcome
   * Succeeded, Failed, Partial, Blocked, Terminated). Filters combine with AND; `outcome` and `trigger` take a
   * comma-separated list; `from` (inclusive) and `to` (exclusive) bound startedAt. Pass `nextCursor`
   * back as `cursor` for the next page; pages never skip or repeat a run.
   */
  @Get('sync-runs')
  @ApiQuery({ name: 'target', required: false })
  @ApiQuery({ name: 'cluster', required: false })
  @ApiQuery({ name: 'appSet', required: false })
  @ApiQuery({ name: 'outcome', required: false, description: 'e.g. Failed,Partial' })
  @ApiQuery({ name: 'trigger', required: false, description: 'e.g. rollback' })
  @ApiQuery({ name: 'operation', required: false, description: 'the run of this requested sync' })
  @ApiQuery({ name: 'from', required: false })
  @ApiQuery({ name: 'to', required: false })
  @ApiQuery({ name: 'limit', required: false })
  @ApiQuery({ name: 'cursor', required: false })
  @ApiQuery({ name: 'format', required: false, enum: ['json', 'ndjson', 'csv'] })
  @ApiAnswer(syncRunPageViewSchema, {
    description: 'format=json (the default); ndjson and csv stream the runs',
  })
  syncRuns(@Query() query: unknown): Promise<SyncRunPageView> | StreamableFile {
    const { format, limit, ...filter } = parseInput(syncRunsQuery, query, 'query');
    if (format === 'json') return this.history.list({ ...filter, limit: limit ?? HISTORY_PAGE });
    const lines = exportLines(this.history.stream({ ...filter, limit }), format, {
      header: syncRunCsvHeader(),
      row: syncRunCsvRow,
    });
    return exportFile(lines, format, 'sync-runs');
  }
}

/**
 * An offline agent's targets show what it last reported: said so, with when it was last seen. The
 * reason weighs the same rule (AgentOffline wins over every other), so the two never disagree.
 */
function staleOf(reason: TargetReason | null | undefined): TargetListItemView['stale'] {
  return reason?.code === 'AgentOffline' ? { lastSeenAt: reason.since ?? null } : null;
}
