// One agent batch's new reports applied, in order, inside the group's transaction.
import type { AuditActor, Report, SyncReport } from '@flotilla/contract';
import type { AuditEntry } from '../audit/audit.service.js';
import { applyDeletionReports } from '../desired-state/target-deletions.service.js';
import { recordBreakGlassChanges } from '../break-glass/break-glass.service.js';
import { isAutomaticRollback, recordAutomaticRollbacks } from '../release/rollouts/automatic-rollback.js';
import type { Prisma } from '../generated/prisma/client.js';
import { refuseUnassignedBundles, type KnownBundles } from './assigned-bundles.js';
import {
  applyComparison,
  applyDrift,
  applyHealth,
  applySync,
  type BatchEffects,
  type TargetState,
} from './report-effects.js';

type Tx = Prisma.TransactionClient;

/** A report of one type with the target (of the reporting cluster) it is about. */
type OfTarget<T extends Report['type']> = { report: Extract<Report, { type: T }>; target: TargetState };

/** What the group's transaction read once for all of its batches. */
export interface GroupReads {
  /** Every target the group's reports name, locked (lockTargets), whichever cluster runs it. */
  targets: Map<string, TargetState>;
  /** What those targets may be reported to run (readKnownBundles). */
  known: KnownBundles;
}

/**
 * One batch's new reports, in order, into the group's effects, and the hooks that need the
 * transaction (refused bundles, break-glass, automatic rollback, requested syncs, deletions).
 * Audit events keep that order: refusals, the reports' own, then each hook's.
 */
export async function applyBatch(
  tx: Tx,
  effects: BatchEffects,
  clusterId: string,
  actor: AuditActor,
  batch: Report[],
  reads: GroupReads,
): Promise<void> {
  // A report about a target this cluster does not run (deleted since, or someone else's) is kept
  // for the record but changes nothing.
  const targets = new Map([...reads.targets].filter(([, t]) => t.clusterId === clusterId));
  // So is a sync naming a bundle the hub never gave its target (refused and audited).
  const unassigned = refuseUnassignedBundles(reads.known, actor, ofType(batch, targets, 'sync'));
  effects.audit.push(...unassigned.audit);
  const applied = batch.filter((r) => !unassigned.refused.has(r.id));
  for (const r of applied) {
    const target = targets.get(r.targetId);
    if (target) applyReport(effects, clusterId, actor, target, r);
  }
  await applyHooks(tx, effects, clusterId, actor, applied, targets);
  // A report about a target that exists on another cluster is an agent overstepping: audited.
  effects.audit.push(
    ...(await foreignReports(
      tx,
      actor,
      applied.filter((r) => !targets.has(r.targetId)),
    )),
  );
}

function applyReport(
  effects: BatchEffects,
  clusterId: string,
  actor: AuditActor,
  target: TargetState,
  r: Report,
): void {
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
      // In applyHooks, after the effects every other report has on the target.
      break;
  }
}

/** What the batch's reports change beyond the target's own rows, in the transaction. */
async function applyHooks(
  tx: Tx,
  effects: BatchEffects,
  clusterId: string,
  actor: AuditActor,
  applied: Report[],
  targets: Map<string, TargetState>,
): Promise<void> {
  const syncs = ofType(applied, targets, 'sync');
  await recordBreakGlassChanges(
    tx,
    clusterId,
    ofType(applied, targets, 'drift')
      .filter(({ report }) => report.breakGlassId)
      .map(({ report, target }) => ({ report, targetName: target.name })),
  );
  effects.audit.push(
    ...(await recordAutomaticRollbacks(
      tx,
      clusterId,
      syncs.map(({ report, target }) => ({ report, targetId: target.id })),
    )),
  );
  for (const { report, target } of syncs)
    if (isAutomaticRollback(report) && report.rolledBackFrom)
      effects.reverts.push({ targetId: target.id, from: report.rolledBackFrom.revision });
  effects.audit.push(
    ...(await closeOperations(
      tx,
      actor,
      syncs.filter(({ report }) => report.operationId),
    )),
  );
  const deletions = await applyDeletionReports(tx, actor, ofType(applied, targets, 'deletion'));
  effects.audit.push(...deletions.audit);
  effects.expand.push(...deletions.expand);
  // A target deleted here has no status or comparison left to write (its rows are gone).
  for (const id of deletions.deleted) {
    effects.status.delete(id);
    effects.comparisons.delete(id);
  }
}

/** The reports of one type about a target of the reporting cluster, each with that target. */
function ofType<T extends Report['type']>(
  reports: Report[],
  targets: Map<string, TargetState>,
  type: T,
): OfTarget<T>[] {
  return reports.flatMap((r) => {
    const target = targets.get(r.targetId);
    return r.type === type && target ? [{ report: r as Extract<Report, { type: T }>, target }] : [];
  });
}

/**
 * Closes the operations (syncs people asked for) that these runs carried out, each once: only a
 * pending operation of the reporting target moves, so an agent naming another target's operation
 * changes nothing. Each closed one is audited with who asked and why, next to the run's outcome.
 */
async function closeOperations(
  tx: Tx,
  actor: AuditActor,
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
 * Audit entries for reports about targets that exist but belong to another cluster (a target deleted
 * since the agent's last poll is not there at all, and is not an attempt).
 */
async function foreignReports(tx: Tx, actor: AuditActor, reports: Report[]): Promise<AuditEntry[]> {
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
