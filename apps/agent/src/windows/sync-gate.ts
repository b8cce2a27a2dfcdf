import { type Assignment, type SyncWindow } from '@flotilla/contract';

/** What the agent needs from `@flotilla/windows`. */
export type WindowEvaluator = (
  windows: SyncWindow[],
  subject: { application: string; namespace: string; cluster: string },
  at: Date,
  options: { manual: boolean },
) => {
  canSync: boolean;
  nextChange: string | Date | null;
  /** Indexes (into `windows`) of the matching windows active at that time. */
  active?: readonly number[];
  /** Indexes of the windows that apply to the subject. */
  matching?: readonly number[];
};

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
  const until = verdict.nextChange
    ? `until ${new Date(verdict.nextChange).toISOString()}`
    : 'with no opening within a year';
  const decision: GateDecision = {
    allowed: false,
    reason: 'window',
    message: `${heldBy(assignment.windows, verdict)} ${until}`,
  };
  if (verdict.nextChange) decision.retryAt = new Date(verdict.nextChange);
  return decision;
}

/**
 * Which windows hold the sync, by name when the hub sent names: the active deny windows, else (no
 * allow window active) the allow windows it is waiting for. "blocked by window eu-night-freeze",
 * not "blocked by sync windows", so history and logs say which one to look at.
 */
function heldBy(windows: Assignment['windows'], verdict: ReturnType<WindowEvaluator>): string {
  const named = (indexes: readonly number[] | undefined, kind: 'allow' | 'deny'): string[] =>
    (indexes ?? [])
      .map((i) => windows[i])
      .filter((w) => w?.kind === kind && w.name !== undefined)
      .map((w) => w?.name as string);
  const deny = named(verdict.active, 'deny');
  if (deny.length > 0) return `blocked by window${deny.length > 1 ? 's' : ''} ${deny.join(', ')}`;
  const activeAllow = named(verdict.active, 'allow');
  const allow = activeAllow.length > 0 ? [] : named(verdict.matching, 'allow');
  if (allow.length > 0) return `outside allow window${allow.length > 1 ? 's' : ''} ${allow.join(', ')}`;
  return 'blocked by sync windows';
}
