import { randomUUID } from 'node:crypto';
import { Injectable, Optional } from '@nestjs/common';
import type { ComparisonReport, DriftReport, HealthReport, Report, SyncReport } from '@flotilla/contract';
import { Database } from '../db/database.js';
import { replayHorizon } from '../config/retention-periods.js';
import { toJson } from '../common/json.js';
import { AuditLog, type AuditEntry } from '../audit/audit.service.js';
import { applyDeletionReports } from '../desired-state/target-deletions.service.js';
import { currentOrigin, type RequestOrigin } from '../common/request-origin.js';
import { HubMetrics } from '../metrics/hub-metrics.service.js';
import { recordBreakGlassChanges } from '../break-glass/break-glass.service.js';
import { recordAutomaticRollbacks } from '../release/rollouts/automatic-rollback.js';
import { refuseUnassignedBundles } from './assigned-bundles.js';
import { Prisma } from '../generated/prisma/client.js';
import { JobQueues } from '../queues/job-queues.service.js';

type Tx = Prisma.TransactionClient;

/** What a batch does to one target's status columns; undefined = leave the column as it is. */
interface StatusChange {
  health?: string;
  healthMessage?: string;
  healthObservedAt?: string;
  lastSyncedRevision?: string;
  lastSyncedDigest?: string;
  lastSyncedAt?: string;
  lastReportAt?: string;
}

/**
 * A target as the batch sees it: its health and last sync move as the batch's reports are applied,
 * and only forward in the agent's time — a report observed before the one shown changes nothing.
 */
interface TargetState {
  id: string;
  name: string;
  health: string;
  healthObservedAt: Date | null;
  lastSyncedAt: Date | null;
  appSetId: string;
  clusterId: string;
  /** Copied onto the target's sync runs: history keeps them after the target, cluster or appset goes. */
  clusterName: string;
  appSetName: string;
}

/** Everything a batch writes, collected in report order and written set-based at the end. */
interface BatchEffects {
  syncRuns: Prisma.SyncRunCreateManyInput[];
  status: Map<string, StatusChange>;
  audit: AuditEntry[];
  /** Per target, the latest comparison the group carries (observed last; equal times: arrived last). */
  comparisons: Map<string, ComparisonReport>;
  /** Appsets to expand once the transaction commits: a target deleted here that Git may still want. */
  expand: { appSetId: string; deletionId: string }[];
}

/**
 * A batch wider than PostgreSQL's bind-parameter limit allows in one statement is written in
 * slices of this many rows (the contract caps a batch at 1,000 reports; jobs may pass more).
 */
const CHUNK = 1000;

/**
 * Generous bounds: at 1,000 agents the pool is busy, and waiting a little beats failing a batch the
 * agent would only send again.
 */
const INGEST_TX = { maxWait: 15_000, timeout: 30_000 };

/** At most this many reports share one transaction (batches are never split). */
const GROUP_REPORTS = 5000;

/** A batch waiting for the next group transaction, and how to answer its request. */
interface Waiting {
  clusterId: string;
  reports: Report[];
  /** Where the batch's request came from: a group commit runs in whichever request started it. */
  origin: RequestOrigin | null;
  resolve: (fresh: Set<string>) => void;
  reject: (error: unknown) => void;
}

/**
 * Agent reports → history, status and audit. A batch's report ids are stored with INSERT … ON
 * CONFLICT DO NOTHING, and only the reports that insert returns as new are applied, in batch order
 * — so a replay (or two replicas receiving the same batch) changes nothing, and a batch mixing new
 * and replayed reports applies exactly the new ones. Sync history and audit events go in as
 * multi-row INSERTs, target status as one UPDATE.
 *
 * Group commit: the audit chain lock is held from the append to commit, so transactions that
 * append take turns — at 100 agents reporting at once, one transaction per batch queued them one
 * commit after another. Instead, batches that arrive while a transaction runs wait and then share
 * the next one: one chain append and one commit for all of them. Each request is answered when its
 * group commits. A group that fails is retried one batch at a time, so a batch that cannot be
 * stored fails alone.
 */
@Injectable()
export class ReportIngestService {
  constructor(
    private readonly db: Database,
    private readonly audit: AuditLog,
    private readonly metrics: HubMetrics,
    /** Absent only where ingest runs without the hub's queues (its own specs): no re-expansion then. */
    @Optional() private readonly queues?: JobQueues,
  ) {}

  async ingestBatch(
    clusterId: string,
    reports: Report[],
  ): Promise<{ accepted: number; duplicates: number; expired?: number }> {
    // Retention deletes report ids after a while; a report observed before what it deleted could be
    // a replay whose id is gone, so it is dropped unread rather than risk applying it twice.
    const watermark = await this.db.prisma.retentionWatermark.findUnique({
      where: { kind: 'reportIds' },
      select: { before: true },
    });
    const horizon = replayHorizon(watermark?.before ?? null);
    const expired = new Set(
      horizon === null ? [] : reports.filter((r) => Date.parse(r.at) < horizon.getTime()),
    );
    // An id repeated inside the batch counts once, as its first occurrence; the rest are replays.
    const firsts = new Map<string, Report>();
    for (const r of reports) if (!expired.has(r) && !firsts.has(r.id)) firsts.set(r.id, r);
    const unique = [...firsts.values()];
    const fresh = unique.length === 0 ? new Set<string>() : await this.enqueue(clusterId, unique);
    for (const r of reports) {
      const accepted = firsts.get(r.id) === r && fresh.has(r.id);
      const result = expired.has(r) ? 'expired' : accepted ? 'accepted' : 'duplicate';
      this.metrics.reports.inc({ type: r.type, result });
    }
    return {
      accepted: fresh.size,
      duplicates: reports.length - expired.size - fresh.size,
      ...(expired.size > 0 && { expired: expired.size }),
    };
  }

  private readonly waiting: Waiting[] = [];
  private draining = false;

  /** The ids of the reports that were new, once the group holding them has committed. */
  private enqueue(clusterId: string, reports: Report[]): Promise<Set<string>> {
    return new Promise((resolve, reject) => {
      this.waiting.push({ clusterId, reports, origin: currentOrigin() ?? null, resolve, reject });
      if (!this.draining) void this.drain();
    });
  }

  private async drain(): Promise<void> {
    this.draining = true;
    try {
      while (this.waiting.length > 0) {
        const group = takeGroup(this.waiting);
        try {
          const fresh = await this.ingestGroup(group);
          group.forEach((w, i) => w.resolve(fresh[i] ?? new Set()));
        } catch (e) {
          if (group.length === 1) {
            group[0]?.reject(e);
            continue;
          }
          // Alone, a batch that cannot be stored fails by itself and the others go through.
          for (const w of group) {
            await this.ingestGroup([w]).then(([f]) => w.resolve(f ?? new Set()), w.reject);
          }
        }
      }
    } finally {
      this.draining = false;
    }
  }

  /**
   * One transaction for the group, set-based across its batches: one INSERT of report ids, one
   * locking read of the targets, then each batch applied in arrival order in memory, then one
   * INSERT of sync runs, one UPDATE of target status and one chain append for all of them.
   */
  private async ingestGroup(group: Waiting[]): Promise<Set<string>[]> {
    const expand: BatchEffects['expand'] = [];
    const fresh = await this.db.prisma.$transaction(async (tx) => {
      // An id sent in two batches of the group belongs to the first; the second sees a replay.
      const owner = new Map<string, number>();
      group.forEach((w, i) => {
        for (const r of w.reports) if (!owner.has(r.id)) owner.set(r.id, i);
      });
      const stored = await this.storeIds(
        tx,
        group.flatMap((w, i) =>
          w.reports
            .filter((r) => owner.get(r.id) === i)
            .map((report) => ({ clusterId: w.clusterId, report })),
        ),
      );
      const applied = group.map((w, i) => w.reports.filter((r) => owner.get(r.id) === i && stored.has(r.id)));
      const targets = await this.targetsOf(tx, applied.flat());
      const actors = await agentActors(tx, group);
      const effects: BatchEffects = {
        syncRuns: [],
        status: new Map(),
        audit: [],
        comparisons: new Map(),
        expand,
      };
      for (const [i, w] of group.entries()) {
        const firstAudit = effects.audit.length;
        const actor = actors.get(w.clusterId) ?? `agent:${w.clusterId}`;
        await this.applyBatch(tx, effects, w.clusterId, actor, applied[i] ?? [], targets);
        for (const entry of effects.audit.slice(firstAudit)) entry.origin ??= w.origin;
      }
      for (let i = 0; i < effects.syncRuns.length; i += CHUNK)
        await insertSyncRuns(tx, effects.syncRuns.slice(i, i + CHUNK));
      await writeStatus(tx, effects.status);
      await writeComparisons(tx, effects.comparisons);
      // Last: the chain lock is held from here to commit, so nothing slow comes after it.
      await this.audit.recordMany(effects.audit, tx);
      return applied.map((reports) => new Set(reports.map((r) => r.id)));
    }, INGEST_TX);
    // After the commit, so the expansion no longer finds the deleted target: one that Git still
    // declares is created again now, not at the next commit. One job per deletion (its id is the
    // variant): a replayed report adds nothing, and equal inputs since the last expansion do not
    // collapse it into the one that ran while the target was being deleted.
    for (const e of expand)
      await this.queues?.enqueue(
        'appset-expand',
        { appSetId: e.appSetId, inputsHash: 'after-deletion' },
        { variant: e.deletionId },
      );
    return fresh;
  }

  /** One batch's new reports, in order, into the group's effects (and the hooks that need the tx). */
  private async applyBatch(
    tx: Tx,
    effects: BatchEffects,
    clusterId: string,
    actor: string,
    batch: Report[],
    allTargets: Map<string, TargetState>,
  ): Promise<void> {
    // A report about a target this cluster does not run (deleted since, or someone else's) is kept
    // for the record but changes nothing.
    const targets = new Map([...allTargets].filter(([, t]) => t.clusterId === clusterId));
    // So is a sync naming a bundle the hub never gave its target (refused and audited).
    const unassigned = await refuseUnassignedBundles(
      tx,
      actor,
      batch.flatMap((r) => {
        const target = targets.get(r.targetId);
        return r.type === 'sync' && target ? [{ report: r, target }] : [];
      }),
    );
    effects.audit.push(...unassigned.audit);
    const applied = batch.filter((r) => !unassigned.refused.has(r.id));
    for (const r of applied) {
      const target = targets.get(r.targetId);
      if (!target) continue;
      switch (r.type) {
        case 'sync':
          applySync(effects, clusterId, actor, target, r);
          break;
        case 'health':
          applyHealth(effects, actor, target, r);
          break;
        case 'drift':
          applyDrift(effects, actor, target, r);
          break;
        case 'comparison':
          applyComparison(effects, target, r);
          break;
        case 'deletion':
          // Below, after the effects every other report has on the target.
          break;
      }
    }
    await recordBreakGlassChanges(
      tx,
      clusterId,
      applied.flatMap((r) => {
        const target = targets.get(r.targetId);
        return r.type === 'drift' && r.breakGlassId && target ? [{ report: r, targetName: target.name }] : [];
      }),
    );
    effects.audit.push(
      ...(await recordAutomaticRollbacks(
        tx,
        clusterId,
        applied.flatMap((r) => {
          const target = targets.get(r.targetId);
          return r.type === 'sync' && target ? [{ report: r, targetId: target.id }] : [];
        }),
      )),
    );
    effects.audit.push(
      ...(await closeOperations(
        tx,
        actor,
        applied.flatMap((r) => {
          const target = targets.get(r.targetId);
          return r.type === 'sync' && r.operationId && target ? [{ report: r, target }] : [];
        }),
      )),
    );
    const deletions = await applyDeletionReports(
      tx,
      actor,
      applied.flatMap((r) => {
        const target = targets.get(r.targetId);
        return r.type === 'deletion' && target ? [{ report: r, target }] : [];
      }),
    );
    effects.audit.push(...deletions.audit);
    effects.expand.push(...deletions.expand);
    // A target deleted here has no status or comparison left to write (its rows are gone).
    for (const id of deletions.deleted) {
      effects.status.delete(id);
      effects.comparisons.delete(id);
    }
    // A report about a target that exists on another cluster is an agent overstepping: audited.
    effects.audit.push(
      ...(await foreignReports(
        tx,
        actor,
        applied.filter((r) => !targets.has(r.targetId)),
      )),
    );
  }

  /**
   * Stores every id not stored yet and returns those. Sorted by id, so two transactions storing
   * overlapping batches lock the ids in the same order and one waits for the other instead of
   * deadlocking; the waiter then finds them stored and skips them.
   */
  private async storeIds(tx: Tx, reports: { clusterId: string; report: Report }[]): Promise<Set<string>> {
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
  private async targetsOf(tx: Tx, reports: Report[]): Promise<Map<string, TargetState>> {
    const ids = [...new Set(reports.map((r) => r.targetId))];
    if (ids.length === 0) return new Map();
    const rows = await tx.$queryRaw<TargetState[]>`
      SELECT t."id", t."name", t."health", t."healthObservedAt", t."lastSyncedAt", t."appSetId", t."clusterId",
             c."name" AS "clusterName", a."name" AS "appSetName"
      FROM "Target" t
      JOIN "Cluster" c ON c."id" = t."clusterId"
      JOIN "ApplicationSet" a ON a."id" = t."appSetId"
      WHERE t."id" = ANY(${ids}::text[])
      ORDER BY t."id"
      FOR UPDATE OF t`;
    return new Map(rows.map((t) => [t.id, t]));
  }
}

/**
 * Closes the operations (syncs people asked for) that these runs carried out, each once: only a
 * pending operation of the reporting target moves, so an agent naming another target's operation
 * changes nothing. Each closed one is audited with who asked and why, next to the run's outcome.
 */
async function closeOperations(
  tx: Tx,
  actor: string,
  runs: { report: SyncReport; target: TargetState }[],
): Promise<AuditEntry[]> {
  const audit: AuditEntry[] = [];
  for (const { report, target } of runs) {
    const [closed] = await tx.$queryRaw<{ requestedBy: string; reason: string }[]>`
      UPDATE "TargetOperation"
         SET "state" = ${report.outcome}, "message" = ${report.message.slice(0, 2000)}, "finishedAt" = now()
       WHERE "id" = ${report.operationId} AND "targetId" = ${target.id} AND "state" = 'Pending'
      RETURNING "requestedBy", "reason"`;
    if (!closed) continue;
    audit.push({
      actor,
      action: 'target.sync-request-done',
      scope: `target:${target.name}`,
      details: {
        operationId: report.operationId,
        outcome: report.outcome,
        ...(report.dryRun && { dryRun: true }),
        revision: report.revision,
        requestedBy: closed.requestedBy,
        reason: closed.reason,
        message: report.message,
      },
    });
  }
  return audit;
}

/**
 * Sync runs with one statement (see storeIds for why raw SQL). Every column `applySync` fills is
 * here; a new SyncRun column written at ingest must be added to both. Idempotent on the report id.
 */
async function insertSyncRuns(tx: Tx, rows: Prisma.SyncRunCreateManyInput[]): Promise<void> {
  if (rows.length === 0) return;
  const col = (pick: (r: Prisma.SyncRunCreateManyInput) => string | null | undefined) =>
    rows.map((r) => pick(r) ?? null);
  const time = (v: string | Date) => new Date(v).toISOString();
  await tx.$executeRaw`
    INSERT INTO "SyncRun" ("id", "targetId", "clusterId", "appSetId", "targetName", "clusterName",
      "appSetName", "revision", "bundleDigest", "trigger", "outcome", "message", "startedAt",
      "finishedAt", "resources", "dryRun", "agentReportId")
    SELECT v."id", v."targetId", v."clusterId", v."appSetId", v."targetName", v."clusterName",
      v."appSetName", v."revision", v."bundleDigest", v."trigger", v."outcome", v."message",
      v."startedAt"::timestamp, v."finishedAt"::timestamp, v."resources"::jsonb, v."dryRun",
      v."agentReportId"
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
      ${col((r) => r.agentReportId)}::text[]
    ) AS v("id", "targetId", "clusterId", "appSetId", "targetName", "clusterName", "appSetName",
           "revision", "bundleDigest", "trigger", "outcome", "message", "startedAt", "finishedAt",
           "resources", "dryRun", "agentReportId")
    -- A report whose id retention deleted while its run is still kept, sent again, adds no second run.
    ON CONFLICT ("agentReportId") DO NOTHING`;
}

/** The oldest waiting batches, up to GROUP_REPORTS reports (always at least one batch). */
function takeGroup(waiting: Waiting[]): Waiting[] {
  let n = 0;
  let size = 0;
  while (n < waiting.length && (n === 0 || size + (waiting[n]?.reports.length ?? 0) <= GROUP_REPORTS)) {
    size += waiting[n]?.reports.length ?? 0;
    n++;
  }
  return waiting.splice(0, n);
}

function changeOf(effects: BatchEffects, targetId: string): StatusChange {
  let change = effects.status.get(targetId);
  if (!change) {
    change = {};
    effects.status.set(targetId, change);
  }
  return change;
}

function applySync(
  effects: BatchEffects,
  clusterId: string,
  actor: string,
  target: TargetState,
  r: SyncReport,
): void {
  effects.syncRuns.push({
    targetId: target.id,
    clusterId,
    appSetId: target.appSetId,
    targetName: target.name,
    clusterName: target.clusterName,
    appSetName: target.appSetName,
    revision: r.revision,
    bundleDigest: r.bundleDigest,
    trigger: r.trigger,
    outcome: r.outcome,
    message: r.message,
    startedAt: new Date(r.startedAt),
    finishedAt: new Date(r.finishedAt),
    resources: toJson(r.resources),
    dryRun: r.dryRun === true,
    agentReportId: r.id,
  });
  const change = changeOf(effects, target.id);
  touchReport(change, r.at);
  if (r.dryRun) {
    // It changed nothing: no last sync moves, and the audit action is its own, so nothing that
    // follows real syncs (notifications, rollouts, rollback) takes it for one.
    effects.audit.push({
      actor,
      action: 'sync.dry-run',
      scope: `target:${target.name}`,
      details: {
        outcome: r.outcome,
        revision: r.revision,
        bundleDigest: r.bundleDigest,
        message: r.message,
        reportId: r.id,
      },
    });
    return;
  }
  // The run is history whatever its age; the target's last sync only moves to a later one.
  const finished = new Date(r.finishedAt);
  if (r.outcome === 'Succeeded' && !isBefore(finished, target.lastSyncedAt)) {
    change.lastSyncedRevision = r.revision;
    change.lastSyncedDigest = r.bundleDigest;
    change.lastSyncedAt = finished.toISOString();
    target.lastSyncedAt = finished;
  }
  effects.audit.push({
    actor,
    action: `sync.${r.outcome.toLowerCase()}`,
    scope: `target:${target.name}`,
    details: {
      revision: r.revision,
      bundleDigest: r.bundleDigest,
      trigger: r.trigger,
      message: r.message,
      reportId: r.id,
    },
  });
}

function applyHealth(effects: BatchEffects, actor: string, target: TargetState, r: HealthReport): void {
  const change = changeOf(effects, target.id);
  touchReport(change, r.at);
  const observed = new Date(r.at);
  // Observed before the health shown (a retry delivered late, an overlapping batch that committed
  // after a newer one): kept as a processed report, but it neither changes the status nor is audited
  // as a change. Equal times: the later arrival wins, as reports of one agent come in order.
  if (isBefore(observed, target.healthObservedAt)) return;
  change.health = r.status;
  change.healthMessage = r.message;
  change.healthObservedAt = observed.toISOString();
  if (target.health !== r.status) {
    effects.audit.push({
      actor,
      action: 'health.changed',
      scope: `target:${target.name}`,
      details: { from: target.health, to: r.status, message: r.message, reportId: r.id },
    });
  }
  // The next health report of this batch compares with this one, as if ingested one by one.
  target.health = r.status;
  target.healthObservedAt = observed;
}

/** Whether `t` is strictly before `shown` (nothing shown yet: never). */
function isBefore(t: Date, shown: Date | null): boolean {
  return shown !== null && t.getTime() < shown.getTime();
}

/** lastReportAt is the newest report's time, in whatever order the reports arrive. */
function touchReport(change: StatusChange, at: string): void {
  const iso = utc(at);
  if (change.lastReportAt === undefined || iso > change.lastReportAt) change.lastReportAt = iso;
}

function applyDrift(effects: BatchEffects, actor: string, target: TargetState, r: DriftReport): void {
  touchReport(changeOf(effects, target.id), r.at);
  effects.audit.push({
    actor: r.manager ? `manager:${r.manager}` : actor,
    action: `drift.${r.state}`,
    scope: `target:${target.name}`,
    details: {
      resource: r.resource,
      paths: r.paths,
      breakGlassId: r.breakGlassId ?? null,
      reportId: r.id,
    },
  });
}

/** An observation, not an action: it moves the target's last report and its comparison, and is not audited. */
function applyComparison(effects: BatchEffects, target: TargetState, r: ComparisonReport): void {
  touchReport(changeOf(effects, target.id), r.at);
  const held = effects.comparisons.get(target.id);
  if (!held || !isBefore(new Date(r.at), new Date(held.at))) effects.comparisons.set(target.id, r);
}

/**
 * Each target's comparison replaces the stored one only when observed at the same time or later:
 * a retry delivered late, or a group that commits after a newer one, never puts an older
 * comparison back. One statement for the batch, however many targets it compared (an agent that
 * starts compares every target at once).
 */
async function writeComparisons(tx: Tx, comparisons: Map<string, ComparisonReport>): Promise<void> {
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
 * The batch decided from the rows it locked (targetsOf), so nothing older can be written here;
 * lastReportAt still takes the later of the two. Timestamps travel as UTC ISO text: the columns
 * hold UTC without a zone, as Prisma writes them.
 */
async function writeStatus(tx: Tx, status: Map<string, StatusChange>): Promise<void> {
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

/** `2026-01-01T02:00:00+02:00` → `2026-01-01T00:00:00.000Z`; PostgreSQL reads it as that UTC wall time. */
function utc(iso: string): string {
  return new Date(iso).toISOString();
}

/**
 * Audit entries for reports about targets that exist but belong to another cluster (a target deleted
 * since the agent's last poll is not there at all, and is not an attempt).
 */
async function foreignReports(tx: Tx, actor: string, reports: Report[]): Promise<AuditEntry[]> {
  if (reports.length === 0) return [];
  const others = await tx.target.findMany({
    where: { id: { in: [...new Set(reports.map((r) => r.targetId))] } },
    select: { id: true, name: true },
  });
  const names = new Map(others.map((t) => [t.id, t.name]));
  return reports.flatMap((r) => {
    const name = names.get(r.targetId);
    return name
      ? [
          {
            actor,
            action: 'agent.access-denied',
            scope: `target:${name}`,
            details: { resource: 'report', reportId: r.id, type: r.type },
          },
        ]
      : [];
  });
}

/**
 * `agent:<cluster name>` for each batch's cluster: the one form every audit event an agent causes
 * uses (the gateway's refusals, rotation, rollbacks), so one filter finds all of a cluster's.
 */
async function agentActors(tx: Tx, group: Waiting[]): Promise<Map<string, string>> {
  const clusters = await tx.cluster.findMany({
    where: { id: { in: [...new Set(group.map((w) => w.clusterId))] } },
    select: { id: true, name: true },
  });
  return new Map(clusters.map((c) => [c.id, `agent:${c.name}`]));
}
