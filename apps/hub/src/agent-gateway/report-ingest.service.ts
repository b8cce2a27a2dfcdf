import type { AuditActor, Report } from '@flotilla/contract';
import { Injectable, Optional } from '@nestjs/common';
import { Database } from '../db/database.js';
import { replayHorizon } from '../config/retention-periods.js';
import { AuditLog } from '../audit/audit.service.js';
import { currentOrigin, type RequestOrigin } from '../common/request-origin.js';
import { HubMetrics } from '../metrics/hub-metrics.service.js';
import type { Prisma } from '../generated/prisma/client.js';
import { JobQueues } from '../queues/job-queues.service.js';
import { GroupCommit } from './group-commit.js';
import { noEffects, type BatchEffects } from './report-effects.js';
import { applyBatch } from './report-batch.js';
import { readKnownBundles } from './assigned-bundles.js';
import { insertSyncRuns, lockTargets, storeIds, writeComparisons, writeStatus } from './ingest-statements.js';

type Tx = Prisma.TransactionClient;

/**
 * Generous bounds: at 1,000 agents the pool is busy, and waiting a little beats failing a batch the
 * agent would only send again.
 */
const INGEST_TX = { maxWait: 15_000, timeout: 30_000 };

/** At most this many reports share one transaction (batches are never split). */
const GROUP_REPORTS = 5000;

/**
 * Two groups may be committing at once: while one waits for PostgreSQL (its statements, its commit's
 * fsync), the next is built and sent, where one at a time left the hub idle for every round trip.
 * They take different audit chain lanes and lock shared target rows in id order, as two replicas do.
 */
const GROUPS_IN_FLIGHT = 2;

/** A batch waiting for the next group transaction. */
interface PendingBatch {
  clusterId: string;
  reports: Report[];
  /** Where the batch's request came from: a group commit runs in whichever request started it. */
  origin: RequestOrigin | null;
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
  /** What became of each report of a batch, once the group holding it has committed. */
  private readonly groups = new GroupCommit<PendingBatch, Verdict[]>(
    (group) => this.ingestGroup(group),
    (batch) => batch.reports.length,
    GROUP_REPORTS,
    () => [],
    GROUPS_IN_FLIGHT,
  );

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
    const verdicts =
      reports.length === 0
        ? []
        : await this.groups.submit({ clusterId, reports, origin: currentOrigin() ?? null });
    const counts = { accepted: 0, duplicate: 0, expired: 0 };
    reports.forEach((r, i) => {
      // Nothing said of a report (a group that returned less): it is not stored, the agent's retry decides.
      const result = verdicts[i] ?? 'duplicate';
      counts[result]++;
      this.metrics.reports.inc({ type: r.type, result });
    });
    return {
      accepted: counts.accepted,
      duplicates: counts.duplicate,
      ...(counts.expired > 0 && { expired: counts.expired }),
    };
  }

  /**
   * One transaction for the group, set-based across its batches: one INSERT of report ids, one
   * locking read of the targets, then each batch applied in arrival order in memory, then one
   * INSERT of sync runs, one UPDATE of target status and one chain append for all of them.
   */
  private async ingestGroup(group: PendingBatch[]): Promise<Verdict[][]> {
    const { verdicts, expand, reverts } = await this.db.prisma.$transaction(async (tx) => {
      const sorted = sortReports(group, await readReplayHorizon(tx));
      const applied = await storeNewReports(tx, group, sorted);
      const targets = await lockTargets(tx, applied.flat());
      const syncs = applied.flat().flatMap((r) => (r.type === 'sync' && targets.has(r.targetId) ? [r] : []));
      const reads = { targets, known: await readKnownBundles(tx, syncs) };
      const actors = await agentActors(tx, group);
      const effects = noEffects();
      for (const [i, batch] of group.entries()) {
        const firstAudit = effects.audit.length;
        const actor: AuditActor = actors.get(batch.clusterId) ?? `agent:${batch.clusterId}`;
        await applyBatch(tx, effects, batch.clusterId, actor, applied[i] ?? [], reads);
        for (const entry of effects.audit.slice(firstAudit)) entry.origin ??= batch.origin;
      }
      await insertSyncRuns(tx, effects.syncRuns);
      await writeStatus(tx, effects.status);
      await writeComparisons(tx, effects.comparisons);
      // Last: the chain lock is held from here to commit, so nothing slow comes after it.
      await this.audit.recordMany(effects.audit, tx);
      return {
        verdicts: group.map((batch, i) => verdictsOf(batch.reports, sorted[i], applied[i] ?? [])),
        expand: effects.expand,
        reverts: effects.reverts,
      };
    }, INGEST_TX);
    await this.expandAfterDeletions(expand);
    // After the commit: the revert job reads the pin the rollback made (release/reverts).
    for (const r of reverts) await this.queues?.enqueue('revert', r);
    return verdicts;
  }

  /**
   * After the commit, so the expansion no longer finds the deleted target: one that Git still
   * declares is created again now, not at the next commit. One job per deletion (its id is the
   * variant): a replayed report adds nothing, and equal inputs since the last expansion do not
   * collapse it into the one that ran while the target was being deleted.
   */
  private async expandAfterDeletions(expand: BatchEffects['expand']): Promise<void> {
    for (const e of expand)
      await this.queues?.enqueue(
        'appset-expand',
        { appSetId: e.appSetId, inputsHash: 'after-deletion' },
        { variant: e.deletionId },
      );
  }
}

/** What became of one report of a batch. */
type Verdict = 'accepted' | 'duplicate' | 'expired';

/** A batch's reports sorted out before anything is stored: those too old to judge, and the first of each id. */
interface SortedBatch {
  expired: Set<Report>;
  unique: Report[];
}

/**
 * Retention deletes report ids after a while; a report observed before what it deleted could be a
 * replay whose id is gone, so it is dropped unread rather than risk applying it twice. Read once per
 * group, in its transaction.
 */
async function readReplayHorizon(tx: Tx): Promise<Date | null> {
  const watermark = await tx.retentionWatermark.findUnique({
    where: { kind: 'reportIds' },
    select: { before: true },
  });
  return replayHorizon(watermark?.before ?? null);
}

/** An id repeated inside a batch counts once, as its first occurrence; the rest are replays. */
function sortReports(group: PendingBatch[], horizon: Date | null): SortedBatch[] {
  return group.map(({ reports }) => {
    const expired = new Set(
      horizon === null ? [] : reports.filter((r) => Date.parse(r.at) < horizon.getTime()),
    );
    const firsts = new Map<string, Report>();
    for (const r of reports) if (!expired.has(r) && !firsts.has(r.id)) firsts.set(r.id, r);
    return { expired, unique: [...firsts.values()] };
  });
}

function verdictsOf(reports: Report[], sorted: SortedBatch | undefined, applied: Report[]): Verdict[] {
  const accepted = new Set(applied);
  return reports.map((r) =>
    sorted?.expired.has(r) ? 'expired' : accepted.has(r) ? 'accepted' : 'duplicate',
  );
}

/**
 * Stores the group's report ids and returns, per batch, its reports that were new. An id sent in
 * two batches of the group belongs to the first; the second sees a replay.
 */
async function storeNewReports(tx: Tx, group: PendingBatch[], sorted: SortedBatch[]): Promise<Report[][]> {
  const unique = sorted.map((b) => b.unique);
  const owner = new Map<string, number>();
  unique.forEach((reports, i) => {
    for (const r of reports) if (!owner.has(r.id)) owner.set(r.id, i);
  });
  const stored = await storeIds(
    tx,
    group.flatMap((w, i) =>
      (unique[i] ?? [])
        .filter((r) => owner.get(r.id) === i)
        .map((report) => ({ clusterId: w.clusterId, report })),
    ),
  );
  return unique.map((reports, i) => reports.filter((r) => owner.get(r.id) === i && stored.has(r.id)));
}

/**
 * `agent:<cluster name>` for each batch's cluster: the one form every audit event an agent causes
 * uses (the gateway's refusals, rotation, rollbacks), so one filter finds all of a cluster's.
 */
async function agentActors(tx: Tx, group: PendingBatch[]): Promise<Map<string, AuditActor>> {
  const clusters = await tx.cluster.findMany({
    where: { id: { in: [...new Set(group.map((w) => w.clusterId))] } },
    select: { id: true, name: true },
  });
  return new Map(clusters.map((c): [string, AuditActor] => [c.id, `agent:${c.name}`]));
}
