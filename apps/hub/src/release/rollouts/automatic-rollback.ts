import { type Report, type SyncReport, systemActor, type AuditActor } from '@flotilla/contract';
import type { AuditEntry } from '../../audit/audit.service.js';
import type { Prisma } from '../../generated/prisma/client.js';
import { ACTIVE, markFailed } from './rollout-records.js';

type Tx = Prisma.TransactionClient;

/** A report of an agent's own, successful rollback: the kind that pins its target (below). */
export function isAutomaticRollback(r: Report): r is SyncReport {
  return (
    r.type === 'sync' &&
    r.trigger === 'rollback' &&
    r.rolledBackFrom !== undefined &&
    r.outcome === 'Succeeded'
  );
}

/**
 * An agent rolled a target back on its own (a sync with trigger `rollback` that names the revision
 * it left): that revision is failed for the appset, the target is pinned where the agent put it (so
 * the hub serves what runs, and auto-sync does not bring the bad revision back), and the revision's
 * rollout halts (its tick sees Halted and stops). Runs inside the report batch's transaction, so it
 * happens exactly once per report; returns the audit events for the batch to chain.
 */
export async function recordAutomaticRollbacks(
  tx: Tx,
  clusterId: string,
  reports: { report: SyncReport; targetId: string }[],
): Promise<AuditEntry[]> {
  const entries: AuditEntry[] = [];
  const rollbacks = reports.filter(({ report }) => isAutomaticRollback(report));
  if (rollbacks.length === 0) return entries;
  const cluster = await tx.cluster.findUniqueOrThrow({ where: { id: clusterId }, select: { name: true } });
  const actor: AuditActor = `agent:${cluster.name}`;
  for (const { report: r, targetId } of rollbacks) {
    const from = r.rolledBackFrom;
    if (!from) continue;
    const target = await tx.target.findUnique({
      where: { id: targetId },
      select: { id: true, name: true, appSetId: true, appSet: { select: { name: true } } },
    });
    if (!target) continue;
    const reason = `automatic rollback on ${cluster.name} from ${from.revision.slice(0, 12)}: ${from.reason || 'unhealthy past its progress deadline'}`;
    await markFailed(tx, target.appSetId, from.revision, reason);
    const pin = { revision: r.revision, bundleDigest: r.bundleDigest, reason, actor, expiresAt: null };
    await tx.targetPin.upsert({ where: { targetId }, create: { targetId, ...pin }, update: pin });
    const halted = await tx.rollout.findMany({
      where: { appSetId: target.appSetId, revision: from.revision, status: { in: ACTIVE } },
      select: { id: true, revision: true },
    });
    await tx.rollout.updateMany({
      where: { id: { in: halted.map((h) => h.id) } },
      data: { status: 'Halted', finishedAt: new Date(), message: `halted: ${reason}` },
    });
    entries.push(
      {
        actor,
        action: 'revision.failed',
        scope: `appset:${target.appSet.name}`,
        details: { revision: from.revision, bundleDigest: from.bundleDigest, target: target.name, reason },
      },
      {
        actor,
        action: 'target.pinned',
        scope: `target:${target.name}`,
        details: { revision: r.revision, bundleDigest: r.bundleDigest, reason, automatic: true },
      },
      ...halted.map((h) => ({
        actor: systemActor('automatic-rollback'),
        action: 'rollout.halted',
        scope: `appset:${target.appSet.name}`,
        details: { revision: h.revision, message: reason },
      })),
    );
  }
  return entries;
}
