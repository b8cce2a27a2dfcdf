import { type SyncWindow } from '@flotilla/contract';
import { CompiledWindow, type Activity } from './compiled-window.js';
import { windowMatches, type WindowTarget } from './window-selector.js';

export interface WindowEvaluation {
  /** Whether the target may sync at the evaluated time (Argo CD's `CanSync(isManual)`). */
  canSync: boolean;
  /** Indexes of the matching windows active at that time, ascending. */
  active: number[];
  /** Indexes of the windows that apply to the target, ascending. */
  matching: number[];
  /** The next instant after that time at which `canSync` changes, or null if not within a year. */
  nextChange: Date | null;
}

export interface EvaluateOptions {
  /** A sync started by a person: `manualSync` windows let it through. */
  manual?: boolean;
}

/** How far ahead `nextChange` and `nextOpen` look: a year and a day, so yearly schedules are seen. */
export const HORIZON_MS = 366 * 86_400_000;
const MAX_STEPS = 100_000;

// Compiled windows are kept per window object, so evaluating one list at many times parses once.
const compiled = new WeakMap<SyncWindow, CompiledWindow>();

function compileAll(windows: readonly SyncWindow[]): CompiledWindow[] {
  return windows.map((w, i) => {
    let c = compiled.get(w);
    if (!c || c.index !== i) {
      c = CompiledWindow.compile(w, i);
      compiled.set(w, c);
    }
    return c;
  });
}

/**
 * Evaluates sync windows for one target at one time. `at` may also be epoch milliseconds (with a
 * fraction, for inputs finer than a millisecond). Throws a WindowError for an invalid window.
 */
export function evaluateWindows(
  windows: readonly SyncWindow[],
  target: WindowTarget,
  at: Date | number,
  opts: EvaluateOptions = {},
): WindowEvaluation {
  const time = typeof at === 'number' ? at : at.getTime();
  const manual = opts.manual === true;
  const matching = compileAll(windows).filter((w) => windowMatches(w.window, target));
  const now = matching.map((w) => w.activity(time));
  const canSync = resolve(matching, now, 'at', manual);
  const next = nextChangeAfter(matching, time, canSync, manual);
  return {
    canSync,
    active: matching.filter((_, i) => now[i]?.at === true).map((w) => w.index),
    matching: matching.map((w) => w.index),
    nextChange: next === null ? null : new Date(next),
  };
}

/**
 * When a target blocked at `from` may next sync: the first millisecond at or after `from` at which
 * `canSync` is true (`from` itself when it is not blocked), or null if not within a year. Unlike
 * `nextChange` this is a time at which evaluation says yes: a window opening at t (exclusive)
 * gives t + 1 ms.
 */
export function nextOpen(
  windows: readonly SyncWindow[],
  target: WindowTarget,
  from: Date,
  opts: EvaluateOptions = {},
): Date | null {
  const first = evaluateWindows(windows, target, from, opts);
  if (first.canSync) return from;
  if (first.nextChange === null) return null;
  const at = first.nextChange.getTime();
  if (evaluateWindows(windows, target, at, opts).canSync) return new Date(at);
  return new Date(at + 1);
}

/** Argo CD's `SyncWindows.CanSync(isManual)` over the windows that match the target. */
function resolve(
  matching: readonly CompiledWindow[],
  activity: readonly Activity[],
  when: keyof Activity,
  manual: boolean,
): boolean {
  if (matching.length === 0) return true;
  const activeDeny: CompiledWindow[] = [];
  const inactiveAllow: CompiledWindow[] = [];
  let activeAllow = false;
  matching.forEach((w, i) => {
    const active = activity[i]?.[when] === true;
    if (w.window.kind === 'deny') {
      if (active) activeDeny.push(w);
    } else if (active) activeAllow = true;
    else inactiveAllow.push(w);
  });
  // Deny wins; a manual sync passes only if every active deny window allows manual syncs.
  if (activeDeny.length > 0) return manual && activeDeny.every((w) => w.window.manualSync);
  if (activeAllow) return true;
  // Allow windows mean "only inside an allow window".
  if (inactiveAllow.length > 0) return manual && inactiveAllow.every((w) => w.window.manualSync);
  return true;
}

/**
 * The infimum of the instants after `time` at which the verdict differs from `verdict`: the
 * verdict can only change where some window opens (just after a fire time) or closes, so walk
 * those edges in order, checking the verdict at each edge and just after it.
 */
function nextChangeAfter(
  matching: readonly CompiledWindow[],
  time: number,
  verdict: boolean,
  manual: boolean,
): number | null {
  if (matching.length === 0) return null;
  const end = time + HORIZON_MS;
  if (
    resolve(
      matching,
      matching.map((w) => w.activity(time)),
      'after',
      manual,
    ) !== verdict
  )
    return time;
  const edges = matching.map((w) => w.nextEdge(time, end));
  for (let step = 0; step < MAX_STEPS; step++) {
    let edge: number | null = null;
    for (const e of edges) if (e !== null && (edge === null || e < edge)) edge = e;
    if (edge === null || edge > end) return null;
    const activity = matching.map((w) => w.activity(edge));
    if (resolve(matching, activity, 'at', manual) !== verdict) return edge;
    if (resolve(matching, activity, 'after', manual) !== verdict) return edge;
    edges.forEach((e, i) => {
      if (e !== null && e <= edge) edges[i] = (matching[i] as CompiledWindow).nextEdge(edge, end);
    });
  }
  return null;
}
