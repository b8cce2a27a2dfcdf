// The fleet deletion guard: a commit that would delete too much of the fleet waits for a person.
import type { PendingDeletionView } from '@flotilla/contract';
import { evaluateDeletionGuard, nextGuardBaseline } from '../desired-state/deletion-guard.js';
import { keyOf, type FleetPlan, type ManagedEntry } from './fleet-plan.js';

/** What a held commit would delete, as the source's `pendingDeletion` shows it (the contract's view). */
export type PendingDeletion = PendingDeletionView;

export interface DeletionJudgement {
  /** Set when the commit waits for confirmation: what it would delete, and the error the source shows. */
  held: { pending: PendingDeletion; error: { code: 'deletion-held'; message: string } } | null;
  /** The source's target baseline once the commit is applied. */
  guardBaseline: number;
}

/**
 * Judges the commit on objects and on the targets of the appsets it deletes (1 of 2 appsets may be
 * most of the fleet), the targets against a baseline that only a confirmation lowers: a truncated
 * commit (or a wrong path) must not delete the fleet.
 */
export function judgeDeletions(input: {
  sourceId: string;
  commit: string;
  plan: FleetPlan;
  managed: readonly ManagedEntry[];
  /** The targets of the appsets the source manages now, and of those the plan deletes. */
  targets: { current: number; deleting: number };
  /** The source's recorded target baseline. */
  baseline: number | null;
  limit: number;
  confirmed: boolean;
}): DeletionJudgement {
  const { sourceId: id, commit, plan, targets, limit, confirmed } = input;
  const mine = input.managed.filter((m) => m.fleetSourceId === id).length;
  const objectVerdict = evaluateDeletionGuard(
    {
      current: mine,
      deleting: plan.delete.length,
      after: mine - plan.delete.length + plan.create.length,
      baseline: null,
    },
    limit,
  );
  const targetVerdict = evaluateDeletionGuard(
    { ...targets, after: targets.current - targets.deleting, baseline: input.baseline },
    limit,
  );
  const guardBaseline = nextGuardBaseline(targetVerdict, targets.current - targets.deleting, confirmed);
  if (!(objectVerdict.wouldHold || targetVerdict.wouldHold) || confirmed)
    return { held: null, guardBaseline };
  const pending: PendingDeletion = {
    commit,
    delete: plan.delete.map((m) => keyOf(m.kind, m.name)).sort(),
    currentCount: mine,
    deletePercent: objectVerdict.deletePercent,
    limit,
    targets: {
      current: targets.current,
      deleting: targets.deleting,
      baseline: targetVerdict.baseline,
      deletePercent: targetVerdict.deletePercent,
    },
    heldAt: new Date().toISOString(),
  };
  const error = {
    code: 'deletion-held' as const,
    message:
      `commit ${commit.slice(0, 12)} would delete ${pending.delete.length} of ${mine} objects (${objectVerdict.deletePercent} %) ` +
      `and ${targets.deleting} of ${targets.current} targets (${targetVerdict.deletePercent} % of the baseline of ${targetVerdict.baseline}), limit ${limit} %: ` +
      `${pending.delete.slice(0, 20).join(', ')}. Nothing changed. If intended, POST /api/v1/fleet-sources/${id}/confirm {"commit": "${commit}", "reason": "..."}`,
  };
  return { held: { pending, error }, guardBaseline };
}
