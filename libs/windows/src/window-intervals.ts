import type { SyncWindow } from '@flotilla/contract';
import { CompiledWindow } from './compiled-window.js';

export interface WindowInterval {
  /** Epoch milliseconds; the window is active strictly between start and end (Argo CD's semantics). */
  start: number;
  end: number;
}

/** A calendar never needs more: a `* * * * *` window is one interval however long it runs. */
const MAX_INTERVALS = 1000;

/**
 * When one window is active between `from` and `to`: its intervals in absolute time, clipped to
 * the range, merged where one fire time's span runs into the next. Computed in the window's own
 * zone by the same fire-time search that decides syncs, so a calendar drawn from it agrees with
 * what the agents do, also across daylight-saving changes (a skipped wall time never fires, a
 * repeated one fires twice). Throws a WindowError for an invalid window.
 */
export function windowIntervals(window: SyncWindow, from: number, to: number): WindowInterval[] {
  const compiled = CompiledWindow.compile(window, 0);
  const out: WindowInterval[] = [];
  let openedAt: number | null = compiled.activity(from).after ? from : null;
  let t = from;
  while (t < to && out.length < MAX_INTERVALS) {
    const edge = compiled.nextEdge(t, to);
    if (edge === null || edge >= to) break;
    // An edge may close one span and open the next at the same instant: the state after it decides.
    const open = compiled.activity(edge).after;
    if (open && openedAt === null) openedAt = edge;
    else if (!open && openedAt !== null) {
      out.push({ start: openedAt, end: edge });
      openedAt = null;
    }
    t = edge;
  }
  if (openedAt !== null && out.length < MAX_INTERVALS) out.push({ start: openedAt, end: to });
  return out;
}
