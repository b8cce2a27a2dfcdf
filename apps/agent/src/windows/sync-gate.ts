import { type Assignment, type SyncWindow } from '@flotilla/contract';

/** What the agent needs from `@flotilla/windows`. */
export type WindowEvaluator = (
  windows: SyncWindow[],
  subject: { application: string; namespace: string; cluster: string },
  at: Date,
  options: { manual: boolean },
) => { canSync: boolean; nextChange: string | Date | null };

/** `manual`: a sync a person asked for, which windows allow only where they set `manualSync`. */
export type GateAction = 'auto' | 'self-heal' | 'manual';

export type GateDecision =
  | { allowed: true; breakGlassId?: string }
  | {
      allowed: false;
      reason: 'window' | 'paused';
      message: string;
      /** When to look again; undefined when nothing scheduled will change the answer. */
      retryAt?: Date;
      breakGlassId?: string;
    };

/**
 * May the agent change the cluster on its own right now? Sync windows decide (deny wins; outside
 * an allow window, wait) unless an active break-glass allows syncing outside windows; a break-glass
 * may also pause self-heal altogether.
 */
export function decideSync(
  assignment: Assignment,
  cluster: string,
  action: GateAction,
  at: Date,
  evaluate: WindowEvaluator,
): GateDecision {
  const active = assignment.breakGlass.filter((b) => Date.parse(b.expiresAt) > at.getTime());
  if (action === 'self-heal') {
    const pause = active.find((b) => b.pauseSelfHeal);
    if (pause) {
      return {
        allowed: false,
        reason: 'paused',
        message: `self-heal paused by break-glass ${pause.id} until ${pause.expiresAt}: ${pause.reason}`,
        retryAt: new Date(pause.expiresAt),
        breakGlassId: pause.id,
      };
    }
  }
  if (assignment.windows.length === 0) return { allowed: true };
  let verdict: ReturnType<WindowEvaluator>;
  try {
    verdict = evaluate(
      assignment.windows,
      { application: assignment.name, namespace: assignment.namespace, cluster },
      at,
      { manual: action === 'manual' },
    );
  } catch (err) {
    // Windows that cannot be read might have been meant to forbid this change: do not guess.
    return {
      allowed: false,
      reason: 'window',
      message: `sync windows cannot be evaluated: ${(err as Error).message}`,
    };
  }
  if (verdict.canSync) return { allowed: true };
  const override = active.find((b) => b.allowSyncOutsideWindows);
  if (override) return { allowed: true, breakGlassId: override.id };
  const decision: GateDecision = {
    allowed: false,
    reason: 'window',
    message: verdict.nextChange
      ? `blocked by sync windows until ${new Date(verdict.nextChange).toISOString()}`
      : 'blocked by sync windows',
  };
  if (verdict.nextChange) decision.retryAt = new Date(verdict.nextChange);
  return decision;
}
