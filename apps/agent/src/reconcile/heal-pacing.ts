/**
 * The self-heal back-off of one target: consecutive heals wait `initialMs`, doubling up to `maxMs`
 * (a quiet spell longer than `maxMs` starts over); failed heals back off the same way on their own.
 */
export class HealPacing {
  private streak = 0;
  private lastHealAt = 0;
  private failedHeals = 0;

  constructor(private readonly backoff: { initialMs: number; maxMs: number }) {}

  /** Earliest time the next self-heal may run: 2 s after the last, doubling per heal, capped. */
  nextHealTime(now: Date): Date {
    const { initialMs, maxMs } = this.backoff;
    if (this.streak === 0) return now;
    const delay = Math.min(maxMs, initialMs * 2 ** (this.streak - 1));
    return new Date(this.lastHealAt + delay);
  }

  /** A heal is being made now. */
  healing(now: Date): void {
    this.streak = now.getTime() - this.lastHealAt > this.backoff.maxMs ? 1 : this.streak + 1;
    this.lastHealAt = now.getTime();
  }

  /** A sync succeeded: failed heals start counting again from none. */
  succeeded(): void {
    this.failedHeals = 0;
  }

  /** A heal failed: how long until it is looked at again (never a tight loop against the API server). */
  failedDelayMs(): number {
    const { initialMs, maxMs } = this.backoff;
    return Math.min(maxMs, initialMs * 2 ** this.failedHeals++);
  }
}
