/**
 * Time source for timestamps and controller deadlines. Controllers read `now()` only, so a test can
 * drive a rollout past `progressDeadlineSeconds` by advancing a manual clock instead of waiting.
 */
export interface SimClock {
  /** Milliseconds since the epoch. */
  now(): number;
  /** Called by the simulator so that an advance wakes the controllers at once (optional). */
  onAdvance?(listener: () => void): () => void;
}

export const systemClock: SimClock = { now: () => Date.now() };

/** A clock that moves only when told to: `advance(ms)` or `set(ms)`. */
export class ManualClock implements SimClock {
  private current: number;
  private readonly listeners = new Set<() => void>();

  constructor(start: number | Date = Date.UTC(2026, 0, 1)) {
    this.current = typeof start === 'number' ? start : start.getTime();
  }

  now(): number {
    return this.current;
  }

  advance(ms: number): void {
    this.set(this.current + ms);
  }

  set(ms: number): void {
    this.current = ms;
    for (const l of [...this.listeners]) l();
  }

  onAdvance(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }
}

/** A real clock that runs `factor` times faster than wall time (e.g. 60: a minute per second). */
export function scaledClock(factor: number, start = Date.now()): SimClock {
  const origin = Date.now();
  return { now: () => start + (Date.now() - origin) * factor };
}

/** RFC 3339 in UTC with whole seconds, as every metav1.Time on the wire. */
export function formatTime(ms: number): string {
  const second = Math.floor(ms / 1000);
  // Every write and controller pass asks for "now": within one second the text is the same.
  if (second !== lastSecond) {
    lastSecond = second;
    lastText = new Date(second * 1000).toISOString().replace('.000Z', 'Z');
  }
  return lastText;
}

let lastSecond = Number.NaN;
let lastText = '';
