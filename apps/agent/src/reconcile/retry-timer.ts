/**
 * One timer per target for "look again at": a retry, a window opening, a rollback deadline. The
 * earliest asked-for time wins; a later one never pushes it back.
 */
export class RetryTimer {
  private timer: NodeJS.Timeout | undefined;
  private at = Infinity;
  private stopped = false;

  constructor(
    private readonly now: () => Date,
    private readonly fire: () => void,
  ) {}

  schedule(at: Date): void {
    if (this.stopped) return;
    const when = at.getTime();
    if (this.timer && when >= this.at) return;
    clearTimeout(this.timer);
    this.at = when;
    // Timers beyond ~24 days overflow; the periodic resync covers anything that far out anyway.
    const delay = Math.min(Math.max(0, when - this.now().getTime()), 2 ** 31 - 1);
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.at = Infinity;
      this.fire();
    }, delay);
  }

  stop(): void {
    this.stopped = true;
    clearTimeout(this.timer);
  }
}
