/**
 * Exponential back-off with jitter, so that a fleet of agents that lost the hub at the same moment
 * does not come back at the same moment either.
 */
export class Backoff {
  private attempt = 0;

  constructor(
    private readonly options: { initialMs: number; maxMs: number; factor?: number; jitter?: number },
    private readonly random: () => number = Math.random,
  ) {}

  /** The delay before the next attempt; each call doubles (by `factor`) the base, up to `maxMs`. */
  next(): number {
    const { initialMs, maxMs, factor = 2, jitter = 0.5 } = this.options;
    const base = Math.min(maxMs, initialMs * factor ** this.attempt);
    this.attempt++;
    // Only shorten, never lengthen, so the cap stays a real upper bound.
    return Math.round(base * (1 - jitter * this.random()));
  }

  reset(): void {
    this.attempt = 0;
  }

  get attempts(): number {
    return this.attempt;
  }
}

/** Resolves after `ms`, or at once (without throwing) when `signal` aborts. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    const timer = setTimeout(done, ms);
    function done(): void {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    }
    signal?.addEventListener('abort', done, { once: true });
  });
}
