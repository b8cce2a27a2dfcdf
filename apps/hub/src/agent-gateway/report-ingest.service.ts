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
import { insertSyncRuns, lockTargets, storeIds, writeComparisons, writeStatus } from './ingest-statements.js';

type Tx = Prisma.TransactionClient;

/**
 * Generous bounds: at 1,000 agents the pool is busy, and waiting a little beats failing a batch the
 * agent would only send again.
 */
const INGEST_TX = { maxWait: 15_000, timeout: 30_000 };

/** At most this many reports share one transaction (batches are never split). */
const GROUP_REPORTS = 5000;

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
  /** The ids of a batch's reports that were new, once the group holding it has committed. */
  private readonly groups = new GroupCommit<PendingBatch, Set<string>>(
    (group) => this.ingestGroup(group),
    (batch) => batch.reports.length,
    GROUP_REPORTS,
    () => new Set(),
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
    const fresh =
      unique.length === 0
        ? new Set<string>()
        : await this.groups.submit({ clusterId, reports: unique, origin: currentOrigin() ?? null });
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

  /**
   * One transaction for the group, set-based across its batches: one INSERT of report ids, one
   * locking read of the targets, then each batch applied in arrival order in memory, then one
   * INSERT of sync runs, one UPDATE of target status and one chain append for all of them.
   */
  private async ingestGroup(group: PendingBatch[]): Promise<Set<string>[]> {
    const { fresh, expand, reverts } = await this.db.prisma.$transaction(async (tx) => {
      const applied = await storeNewReports(tx, group);
      const targets = await lockTargets(tx, applied.flat());
      const actors = await agentActors(tx, group);
      const effects = noEffects();
      for (const [i, batch] of group.entries()) {
        const firstAudit = effects.audit.length;
        const actor: AuditActor = actors.get(batch.clusterId) ?? `agent:${batch.clusterId}`;
        await applyBatch(tx, effects, batch.clusterId, actor, applied[i] ?? [], targets);
        for (const entry of effects.audit.slice(firstAudit)) entry.origin ??= batch.origin;
      }
      await insertSyncRuns(tx, effects.syncRuns);
      await writeStatus(tx, effects.status);
      await writeComparisons(tx, effects.comparisons);
      // Last: the chain lock is held from here to commit, so nothing slow comes after it.
      await this.audit.recordMany(effects.audit, tx);
      return {
        fresh: applied.map((reports) => new Set(reports.map((r) => r.id))),
        expand: effects.expand,
        reverts: effects.reverts,
      };
    }, INGEST_TX);
    await this.expandAfterDeletions(expand);
    // After the commit: the revert job reads the pin the rollback made (release/reverts).
    for (const r of reverts) await this.queues?.enqueue('revert', r);
    return fresh;
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

/**
 * Stores the group's report ids and returns, per batch, its reports that were new. An id sent in
 * two batches of the group belongs to the first; the second sees a replay.
 */
async function storeNewReports(tx: Tx, group: PendingBatch[]): Promise<Report[][]> {
  const owner = new Map<string, number>();
  group.forEach((w, i) => {
    for (const r of w.reports) if (!owner.has(r.id)) owner.set(r.id, i);
  });
  const stored = await storeIds(
    tx,
    group.flatMap((w, i) =>
      w.reports.filter((r) => owner.get(r.id) === i).map((report) => ({ clusterId: w.clusterId, report })),
    ),
  );
  return group.map((w, i) => w.reports.filter((r) => owner.get(r.id) === i && stored.has(r.id)));
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
