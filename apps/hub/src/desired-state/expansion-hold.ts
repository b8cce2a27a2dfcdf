// An expansion the deletion guard holds: what is stored on the appset, and the message that tells a person what to do.
import type { PendingExpansionView } from '@flotilla/contract';
import type { GuardVerdict } from './deletion-guard.js';
import type { ExpansionPlan } from './expansion-plan.js';

/** An expansion the deletion guard holds, as stored on the appset (`pendingExpansion`). */
export type PendingExpansion = PendingExpansionView;

/**
 * The hold of a computed target set; `previous` (the hold stored now) keeps its time when it holds
 * the same set, so a re-expansion does not restart the wait.
 */
export function pendingExpansionOf(held: {
  inputsHash: string;
  previous: PendingExpansion | null;
  currentCount: number;
  targetCount: number;
  plan: ExpansionPlan;
  verdict: GuardVerdict;
  limit: number;
}): PendingExpansion {
  const { inputsHash, previous, plan, verdict } = held;
  return {
    inputsHash,
    heldAt: previous?.inputsHash === inputsHash ? previous.heldAt : new Date().toISOString(),
    currentCount: held.currentCount,
    targetCount: held.targetCount,
    delete: plan.delete.map((t) => t.name).sort(),
    create: plan.create.map((d) => d.name).sort(),
    update: plan.update.map((u) => u.desired.name).sort(),
    move: plan.move.map((m) => m.desired.name).sort(),
    deletePercent: verdict.deletePercent,
    limit: held.limit,
    baseline: verdict.baseline,
  };
}

/** The appset's error while held: how much it would delete, why that is too much, and how to confirm. */
export function heldMessage(appSetName: string, held: PendingExpansion): string {
  const shown = held.delete.slice(0, 20).join(', ');
  const more = held.delete.length > 20 ? ` and ${held.delete.length - 20} more` : '';
  const why =
    held.delete.length === held.currentCount
      ? 'all of them'
      : held.baseline > held.currentCount
        ? `${held.deletePercent} % of the baseline of ${held.baseline} targets > the ${held.limit} % limit; the baseline moves only when a person confirms`
        : `${held.deletePercent} % > the ${held.limit} % limit`;
  return (
    `expansion held: it would delete ${held.delete.length} of ${held.currentCount} targets (${why}): ${shown}${more}. ` +
    `Nothing changed. If intended, POST /api/v1/appsets/${appSetName}/confirm-expansion ` +
    `{"inputsHash": "${held.inputsHash}", "reason": "..."}`
  );
}
