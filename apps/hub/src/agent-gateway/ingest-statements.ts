// The set-based SQL of one ingest transaction: report ids stored, targets locked, runs, status and comparisons written.
import { randomUUID } from 'node:crypto';
import type { ComparisonReport, Report } from '@flotilla/contract';
import { toJson } from '../common/json.js';
import type { Prisma } from '../generated/prisma/client.js';
import { utc, type StatusChange, type TargetState } from './report-effects.js';

type Tx = Prisma.TransactionClient;

/**
 * A batch wider than PostgreSQL's bind-parameter limit allows in one statement is written in
 * slices of this many rows (the contract caps a batch at 1,000 reports; jobs may pass more).
 */
const CHUNK = 1000;

/**
 * Stores every id not stored yet and returns those. Sorted by id, so two transactions storing
 * overlapping batches lock the ids in the same order and one waits for the other instead of
 * deadlocking; the waiter then finds them stored and skips them.
 */
export async function storeIds(
  tx: Tx,
  reports: { clusterId: string; report: Report }[],
): Promise<Set<string>> {
  const rows = [...reports].sort((a, b) =>
    a.report.id < b.report.id ? -1 : a.report.id > b.report.id ? 1 : 0,
  );
  const fresh = new Set<string>();
  for (let i = 0; i < rows.length; i += CHUNK) {
    const chunk = rows.slice(i, i + CHUNK);
    // Raw SQL: Prisma's createMany costs about 1.5 ms a row in JavaScript, which at a fleet's
    // report rate was most of the ingest time; this is one statement per 1,000 rows.
    const inserted = await tx.$queryRaw<{ id: string }[]>`
      INSERT INTO "ProcessedReport" ("id", "clusterId", "type", "targetId", "payload")
      SELECT v."id", v."clusterId", v."type", v."targetId", v."payload"::jsonb
      FROM unnest(
        ${chunk.map((r) => r.report.id)}::text[],
        ${chunk.map((r) => r.clusterId)}::text[],
        ${chunk.map((r) => r.report.type)}::text[],
        ${chunk.map((r) => r.report.targetId)}::text[],
        ${chunk.map((r) => JSON.stringify(toJson(r.report)))}::text[]
      ) WITH ORDINALITY AS v("id", "clusterId", "type", "targetId", "payload", "n")
      ORDER BY v."n"
      ON CONFLICT ("id") DO NOTHING
      RETURNING "id"`;
    for (const r of inserted) fresh.add(r.id);
  }
  return fresh;
}

/**
 * The targets the reports name, their rows locked in id order: two groups about the same targets
 * (an agent's retry racing its original on another replica) take turns. Each batch then keeps
 * only its own cluster's.
 */
export async function lockTargets(tx: Tx, reports: Report[]): Promise<Map<string, TargetState>> {
  const ids = [...new Set(reports.map((r) => r.targetId))];
  if (ids.length === 0) return new Map();
  const rows = await tx.$queryRaw<TargetState[]>`
    SELECT t."id", t."name", t."health", t."healthObservedAt", t."lastSyncedAt", t."lastSyncedRevision",
           t."appSetId", t."clusterId",
           c."name" AS "clusterName", a."name" AS "appSetName"
    FROM "Target" t
    JOIN "Cluster" c ON c."id" = t."clusterId"
    JOIN "ApplicationSet" a ON a."id" = t."appSetId"
    WHERE t."id" = ANY(${ids}::text[])
    ORDER BY t."id"
    FOR UPDATE OF t`;
  return new Map(rows.map((t) => [t.id, t]));
}

/** The group's sync runs, CHUNK rows per statement. */
export async function insertSyncRuns(tx: Tx, rows: Prisma.SyncRunCreateManyInput[]): Promise<void> {
  for (let i = 0; i < rows.length; i += CHUNK) await insertSyncRunChunk(tx, rows.slice(i, i + CHUNK));
}

/**
 * Sync runs with one statement (see storeIds for why raw SQL). Every column `applySync` fills is
 * here; a new SyncRun column written at ingest must be added to both. Idempotent on the report id.
 */
async function insertSyncRunChunk(tx: Tx, rows: Prisma.SyncRunCreateManyInput[]): Promise<void> {
  if (rows.length === 0) return;
  const col = (pick: (r: Prisma.SyncRunCreateManyInput) => string | null | undefined) =>
    rows.map((r) => pick(r) ?? null);
  const time = (v: string | Date) => new Date(v).toISOString();
  await tx.$executeRaw`
    INSERT INTO "SyncRun" ("id", "targetId", "clusterId", "appSetId", "targetName", "clusterName",
      "appSetName", "revision", "bundleDigest", "trigger", "outcome", "message", "startedAt",
      "finishedAt", "resources", "dryRun", "agentReportId", "operationId")
    SELECT v."id", v."targetId", v."clusterId", v."appSetId", v."targetName", v."clusterName",
      v."appSetName", v."revision", v."bundleDigest", v."trigger", v."outcome", v."message",
      v."startedAt"::timestamp, v."finishedAt"::timestamp, v."resources"::jsonb, v."dryRun",
      v."agentReportId", v."operationId"
    FROM unnest(
      ${rows.map(() => randomUUID())}::text[],
      ${col((r) => r.targetId)}::text[],
      ${col((r) => r.clusterId)}::text[],
      ${col((r) => r.appSetId)}::text[],
      ${col((r) => r.targetName)}::text[],
      ${col((r) => r.clusterName)}::text[],
      ${col((r) => r.appSetName)}::text[],
      ${col((r) => r.revision)}::text[],
      ${col((r) => r.bundleDigest)}::text[],
      ${col((r) => r.trigger)}::text[],
      ${col((r) => r.outcome)}::text[],
      ${col((r) => r.message ?? '')}::text[],
      ${col((r) => time(r.startedAt))}::text[],
      ${col((r) => time(r.finishedAt))}::text[],
      ${col((r) => JSON.stringify(r.resources ?? []))}::text[],
      ${rows.map((r) => r.dryRun === true)}::boolean[],
      ${col((r) => r.agentReportId)}::text[],
      ${col((r) => r.operationId)}::text[]
    ) AS v("id", "targetId", "clusterId", "appSetId", "targetName", "clusterName", "appSetName",
           "revision", "bundleDigest", "trigger", "outcome", "message", "startedAt", "finishedAt",
           "resources", "dryRun", "agentReportId", "operationId")
    -- A report whose id retention deleted while its run is still kept, sent again, adds no second run.
    -- (No unique index can span the monthly partitions; storeIds already made each id fresh here.)
    -- Only runs stored before the watermark can have lost their id: a run and its id are stored in
    -- one transaction (same now()), and retention moves the watermark before deleting ids older than
    -- it. So only those partitions are probed (pruned at run time), none while no id was ever deleted.
    WHERE NOT EXISTS (
      SELECT 1 FROM "SyncRun" s
       WHERE s."agentReportId" = v."agentReportId"
         AND s."createdAt" < (SELECT w."before" FROM "RetentionWatermark" w WHERE w."kind" = 'reportIds'))`;
}

/**
 * Each target's comparison replaces the stored one only when observed at the same time or later:
 * a retry delivered late, or a group that commits after a newer one, never puts an older
 * comparison back. One statement for the batch, however many targets it compared (an agent that
 * starts compares every target at once).
 */
export async function writeComparisons(tx: Tx, comparisons: Map<string, ComparisonReport>): Promise<void> {
  if (comparisons.size === 0) return;
  const entries = [...comparisons.entries()];
  const col = <T>(pick: (r: ComparisonReport) => T) => entries.map(([, r]) => pick(r));
  await tx.$executeRaw`
    INSERT INTO "TargetComparison" ("targetId", "observedAt", "revision", "bundleDigest", "inSync",
      "compared", "truncated", "objects", "reportId")
    SELECT v."targetId", v."observedAt"::timestamp, v."revision", v."bundleDigest", v."inSync",
      v."compared", v."truncated", v."objects"::jsonb, v."reportId"
    FROM unnest(
      ${entries.map(([targetId]) => targetId)}::text[],
      ${col((r) => utc(r.at))}::text[],
      ${col((r) => r.revision)}::text[],
      ${col((r) => r.bundleDigest)}::text[],
      ${col((r) => r.inSync)}::boolean[],
      ${col((r) => r.compared)}::int[],
      ${col((r) => r.truncated)}::boolean[],
      ${col((r) => JSON.stringify(r.objects))}::text[],
      ${col((r) => r.id)}::text[]
    ) AS v("targetId", "observedAt", "revision", "bundleDigest", "inSync", "compared", "truncated",
           "objects", "reportId")
    ON CONFLICT ("targetId") DO UPDATE SET
      "observedAt" = EXCLUDED."observedAt", "revision" = EXCLUDED."revision",
      "bundleDigest" = EXCLUDED."bundleDigest", "inSync" = EXCLUDED."inSync",
      "compared" = EXCLUDED."compared", "truncated" = EXCLUDED."truncated",
      "objects" = EXCLUDED."objects", "reportId" = EXCLUDED."reportId"
    WHERE "TargetComparison"."observedAt" <= EXCLUDED."observedAt"`;
}

/**
 * One UPDATE for every target of the batch; a NULL in a column means "not changed by this batch".
 * The batch decided from the rows it locked (lockTargets), so nothing older can be written here;
 * lastReportAt still takes the later of the two. Timestamps travel as UTC ISO text: the columns
 * hold UTC without a zone, as Prisma writes them.
 */
export async function writeStatus(tx: Tx, status: Map<string, StatusChange>): Promise<void> {
  if (status.size === 0) return;
  const entries = [...status.entries()];
  const col = (pick: (c: StatusChange) => string | undefined) => entries.map(([, c]) => pick(c) ?? null);
  await tx.$executeRaw`
    UPDATE "Target" AS t SET
      "health" = COALESCE(v."health", t."health"),
      "healthMessage" = COALESCE(v."healthMessage", t."healthMessage"),
      "healthObservedAt" = COALESCE(v."healthObservedAt"::timestamp, t."healthObservedAt"),
      "lastSyncedRevision" = COALESCE(v."lastSyncedRevision", t."lastSyncedRevision"),
      "lastSyncedDigest" = COALESCE(v."lastSyncedDigest", t."lastSyncedDigest"),
      "lastSyncedAt" = COALESCE(v."lastSyncedAt"::timestamp, t."lastSyncedAt"),
      "lastReportAt" = GREATEST(v."lastReportAt"::timestamp, t."lastReportAt"),
      "updatedAt" = (now() AT TIME ZONE 'UTC')
    FROM unnest(
      ${entries.map(([id]) => id)}::text[],
      ${col((c) => c.health)}::text[],
      ${col((c) => c.healthMessage)}::text[],
      ${col((c) => c.healthObservedAt)}::text[],
      ${col((c) => c.lastSyncedRevision)}::text[],
      ${col((c) => c.lastSyncedDigest)}::text[],
      ${col((c) => c.lastSyncedAt)}::text[],
      ${col((c) => c.lastReportAt)}::text[]
    ) AS v("id", "health", "healthMessage", "healthObservedAt", "lastSyncedRevision",
           "lastSyncedDigest", "lastSyncedAt", "lastReportAt")
    WHERE t."id" = v."id"`;
}
