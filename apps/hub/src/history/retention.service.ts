import { Inject, Injectable, Logger } from '@nestjs/common';
import { Prisma } from '../generated/prisma/client.js';
import { AuditLog } from '../audit/audit.service.js';
import { HUB_CONFIG, type HubConfig } from '../config/hub-config.js';
import { Database } from '../db/database.js';
import { dropMonthPartitionsBefore, keepPartitionsAhead } from '../db/partitions.js';
import { HubMetrics } from '../metrics/hub-metrics.service.js';
import { retentionCutoffs, type RetentionCutoffs } from '../config/retention-periods.js';
import { systemActor } from '@flotilla/contract';
import { STRICT_BASELINE_CANDIDATES } from '../sources/verification/source-verifications.service.js';

/** What one retention run removed, by kind (also the `retention.pruned` audit event's details). */
export interface RetentionCounts {
  reportPayloadsTrimmed: number;
  reportIdsDeleted: number;
  syncRunsDeleted: number;
  bundlesDeleted: number;
  sourceVerificationsDeleted: number;
  chartVerificationsDeleted: number;
  /** Whole months of sync runs dropped (their rows are counted in syncRunsDeleted too). */
  syncRunPartitionsDropped: number;
}

export const RETENTION_KINDS = [
  'reportPayloadsTrimmed',
  'reportIdsDeleted',
  'syncRunsDeleted',
  'bundlesDeleted',
  'sourceVerificationsDeleted',
  'chartVerificationsDeleted',
] as const satisfies readonly (keyof RetentionCounts)[];

/**
 * Prunes what the hub would otherwise keep forever: agent report payloads (their ids stay long
 * enough to recognise replays), old sync history, and rendered bundles nothing needs any more.
 *
 * Every statement touches at most `batchSize` rows, picked with FOR UPDATE SKIP LOCKED, and commits
 * on its own: no statement holds locks for long, ingest and renders never wait on it, and two runs
 * at once (two replicas, a manual run beside the scheduled one) split the work instead of colliding.
 * Sync runs are kept in monthly partitions: a month wholly past the cutoff is dropped in one
 * statement, and only the month the cutoff falls in is deleted in batches.
 */
@Injectable()
export class RetentionService {
  private readonly logger = new Logger(RetentionService.name);

  constructor(
    private readonly db: Database,
    private readonly audit: AuditLog,
    private readonly metrics: HubMetrics,
    @Inject(HUB_CONFIG) private readonly config: HubConfig,
  ) {}

  /** One pass over every kind, then one `retention.pruned` audit event with the counts. */
  async run(now: Date = new Date()): Promise<RetentionCounts> {
    const cutoffs = retentionCutoffs(this.config.retention, now);
    // The keeper's scheduled pass: the coming months exist before anything is written to them.
    await keepPartitionsAhead(this.db.prisma, now);
    const reportPayloadsTrimmed = await this.batched((n) =>
      this.trimReportPayloads(cutoffs.reportPayloads, n),
    );
    const reportIdsDeleted = await this.deleteReportIdsAll(cutoffs.reportIds);
    const months = await this.dropSyncRunMonths(cutoffs.syncRuns);
    const counts: RetentionCounts = {
      reportPayloadsTrimmed,
      reportIdsDeleted,
      syncRunsDeleted: months.rows + (await this.batched((n) => this.deleteSyncRuns(cutoffs.syncRuns, n))),
      bundlesDeleted: await this.batched((n) => this.deleteBundles(cutoffs.bundles, n)),
      sourceVerificationsDeleted: await this.batched((n) =>
        this.deleteSourceVerifications(cutoffs.sourceVerifications, n),
      ),
      chartVerificationsDeleted: await this.batched((n) =>
        this.deleteChartVerifications(cutoffs.sourceVerifications, n),
      ),
      syncRunPartitionsDropped: months.partitions.length,
    };
    for (const kind of RETENTION_KINDS) this.metrics.retentionPruned.inc({ kind }, counts[kind]);
    this.metrics.retentionPartitionsDropped.inc({ table: 'SyncRun' }, counts.syncRunPartitionsDropped);
    this.metrics.retentionLastRun.set(now.getTime() / 1000);
    await this.audit.record({
      actor: systemActor('retention'),
      action: 'retention.pruned',
      scope: 'hub',
      details: { ...counts, cutoffs: cutoffsDetail(cutoffs) },
      origin: null,
    });
    this.logger.log(
      `retention: ${counts.reportPayloadsTrimmed} report payloads trimmed, ${counts.reportIdsDeleted} report ids, ` +
        `${counts.syncRunsDeleted} sync runs (${counts.syncRunPartitionsDropped} whole months) and ${counts.bundlesDeleted} bundles deleted`,
    );
    return counts;
  }

  /** Repeats one batch statement until a batch comes back short; the total it touched. */
  private async batched(step: (limit: number) => Promise<number>): Promise<number> {
    const limit = this.config.retention.batchSize;
    let total = 0;
    for (;;) {
      const n = await step(limit);
      total += n;
      if (n < limit) return total;
    }
  }

  private async trimReportPayloads(cutoff: Date | null, limit: number): Promise<number> {
    if (cutoff === null) return 0;
    // The partial index on untrimmed rows makes each batch start at the oldest payload left.
    return this.db.prisma.$executeRaw`
      UPDATE "ProcessedReport" SET "payload" = NULL
       WHERE "id" IN (SELECT "id" FROM "ProcessedReport"
                       WHERE "payload" IS NOT NULL AND "receivedAt" < ${cutoff}
                       ORDER BY "receivedAt" LIMIT ${limit}
                       FOR UPDATE SKIP LOCKED)`;
  }

  /**
   * Report ids received before the cutoff. The watermark moves first, so ingest drops a replay of
   * any id this may delete (see replayHorizon) before the id is gone.
   */
  private async deleteReportIdsAll(cutoff: Date | null): Promise<number> {
    if (cutoff === null) return 0;
    await this.db.prisma.$executeRaw`
      INSERT INTO "RetentionWatermark" ("kind", "before") VALUES ('reportIds', ${cutoff})
      ON CONFLICT ("kind") DO UPDATE SET "before" = GREATEST("RetentionWatermark"."before", EXCLUDED."before")`;
    return this.batched((n) => this.deleteReportIds(cutoff, n));
  }

  private async deleteReportIds(cutoff: Date | null, limit: number): Promise<number> {
    if (cutoff === null) return 0;
    return this.db.prisma.$executeRaw`
      DELETE FROM "ProcessedReport"
       WHERE "id" IN (SELECT "id" FROM "ProcessedReport" WHERE "receivedAt" < ${cutoff}
                       ORDER BY "receivedAt" LIMIT ${limit}
                       FOR UPDATE SKIP LOCKED)`;
  }

  /** Every month of sync runs stored wholly before the cutoff, dropped whole. */
  private async dropSyncRunMonths(cutoff: Date | null) {
    if (cutoff === null) return { partitions: [], rows: 0 };
    return dropMonthPartitionsBefore(this.db.prisma, 'SyncRun', cutoff);
  }

  /**
   * Runs stored before the cutoff that no dropped month held: the cutoff's own month (and any row in
   * the DEFAULT partition). By `createdAt`, the hub's clock, like the partitions: an agent whose
   * clock is off keeps its runs for the period all the same.
   */
  private async deleteSyncRuns(cutoff: Date | null, limit: number): Promise<number> {
    if (cutoff === null) return 0;
    return this.db.prisma.$executeRaw`
      DELETE FROM "SyncRun"
       WHERE ("id", "createdAt") IN (SELECT "id", "createdAt" FROM "SyncRun" WHERE "createdAt" < ${cutoff}
                       ORDER BY "createdAt" LIMIT ${limit}
                       FOR UPDATE SKIP LOCKED)`;
  }

  /**
   * Bundles older than the cutoff that no target needs. Kept whatever their age: every target's
   * desired, released and last synced bundle, every pinned bundle, and each target's last good
   * bundle before the one it runs (its latest succeeded run of another bundle: what a rollback
   * goes back to). The check is inside the DELETE, so a reference committed before it counts; one
   * made after comes from a render, which makes the bundle young again (RenderService).
   */
  private async deleteBundles(cutoff: Date | null, limit: number): Promise<number> {
    if (cutoff === null) return 0;
    return this.db.prisma.$executeRaw`
      WITH "needed" AS (
        SELECT "bundleDigest" AS "digest" FROM "Target" WHERE "bundleDigest" IS NOT NULL
        UNION SELECT "releasedDigest" FROM "Target" WHERE "releasedDigest" IS NOT NULL
        UNION SELECT "lastSyncedDigest" FROM "Target" WHERE "lastSyncedDigest" IS NOT NULL
        UNION SELECT "bundleDigest" FROM "TargetPin"
        UNION SELECT "lastGood"."bundleDigest" FROM "Target" t
          CROSS JOIN LATERAL (
            SELECT r."bundleDigest" FROM "SyncRun" r
             WHERE r."targetId" = t."id" AND r."outcome" = 'Succeeded' AND NOT r."dryRun"
               AND r."bundleDigest" IS DISTINCT FROM t."lastSyncedDigest"
             ORDER BY r."startedAt" DESC LIMIT 1) AS "lastGood"
      )
      DELETE FROM "Bundle"
       WHERE "digest" IN (SELECT b."digest" FROM "Bundle" b
                           WHERE b."createdAt" < ${cutoff}
                             AND NOT EXISTS (SELECT 1 FROM "needed" n WHERE n."digest" = b."digest")
                           ORDER BY b."createdAt" LIMIT ${limit}
                           FOR UPDATE OF b SKIP LOCKED)`;
  }

  /**
   * Signed-commit verdicts judged before the cutoff that nothing asks for again. Kept whatever their
   * age: the verdict of every revision a target wants, was released, last synced or is pinned to
   * (a multi-source target's sources too), under any key list — matched by commit alone, which can
   * only keep more — and each repository's newest verified commits (ties included), the baselines strict mode
   * judges new commits from: deleting those would shrink the range strict checks. A verdict pruned
   * and asked for again is judged again by git.
   */
  private async deleteSourceVerifications(cutoff: Date | null, limit: number): Promise<number> {
    if (cutoff === null) return 0;
    return this.db.prisma.$executeRaw`
      WITH "live" AS (${LIVE_REVISIONS}), "baselines" AS (
        SELECT "repositoryId", "commit", "digest" FROM (
          SELECT "repositoryId", "commit", "digest",
                 RANK() OVER (PARTITION BY "repositoryId" ORDER BY "createdAt" DESC) AS "rank"
            FROM "SourceVerification" WHERE "verified") AS "ranked"
         WHERE "rank" <= ${STRICT_BASELINE_CANDIDATES}
      )
      DELETE FROM "SourceVerification"
       WHERE ("repositoryId", "commit", "digest") IN (
         SELECT v."repositoryId", v."commit", v."digest" FROM "SourceVerification" v
          WHERE v."createdAt" < ${cutoff}
            AND NOT EXISTS (SELECT 1 FROM "live" l WHERE l."commit" = v."commit")
            AND NOT EXISTS (SELECT 1 FROM "baselines" b
                             WHERE (b."repositoryId", b."commit", b."digest") = (v."repositoryId", v."commit", v."digest"))
          ORDER BY v."createdAt" LIMIT ${limit}
          FOR UPDATE OF v SKIP LOCKED)`;
  }

  /**
   * Chart provenance verdicts older than RETENTION_SOURCE_VERIFICATION_DAYS, except those of a chart
   * version a target wants, was released, last synced or is pinned to. A verdict pruned and asked
   * for again is judged again by Helm.
   */
  private async deleteChartVerifications(cutoff: Date | null, limit: number): Promise<number> {
    if (cutoff === null) return 0;
    return this.db.prisma.$executeRaw`
      WITH "live" AS (${LIVE_REVISIONS})
      DELETE FROM "ChartVerification"
       WHERE ("repoUrl", "chart", "version", "packageDigest", "digest") IN (
         SELECT v."repoUrl", v."chart", v."version", v."packageDigest", v."digest" FROM "ChartVerification" v
          WHERE v."createdAt" < ${cutoff}
            AND NOT EXISTS (SELECT 1 FROM "live" l WHERE l."commit" = v."version")
          ORDER BY v."createdAt" LIMIT ${limit}
          FOR UPDATE OF v SKIP LOCKED)`;
  }
}

/**
 * Every revision a target wants, was released, last synced or is pinned to (a commit, or a chart
 * version) — as a column `commit`; a multi-source target's each source's.
 */
const LIVE_REVISIONS = Prisma.sql`
        SELECT "desiredRevision" AS "commit" FROM "Target"
        UNION SELECT "releasedRevision" FROM "Target" WHERE "releasedRevision" IS NOT NULL
        UNION SELECT "lastSyncedRevision" FROM "Target" WHERE "lastSyncedRevision" IS NOT NULL
        UNION SELECT "revision" FROM "TargetPin"
        UNION SELECT s ->> 'revision' FROM "Target" t
          CROSS JOIN LATERAL jsonb_array_elements(
            CASE WHEN jsonb_typeof(t."sources") = 'array' THEN t."sources" ELSE '[]'::jsonb END) AS s`;

function cutoffsDetail(c: RetentionCutoffs): Record<keyof RetentionCutoffs, string | null> {
  const iso = (d: Date | null) => d?.toISOString() ?? null;
  return {
    reportPayloads: iso(c.reportPayloads),
    reportIds: iso(c.reportIds),
    syncRuns: iso(c.syncRuns),
    bundles: iso(c.bundles),
    sourceVerifications: iso(c.sourceVerifications),
  };
}
