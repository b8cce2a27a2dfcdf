/**
 * One timer for every cluster in the process. A cluster asks to be reconciled (after a write, or
 * at a later time); idle clusters cost nothing because nothing is scheduled for them.
 */
export interface Reconcilable {
  /** Runs one controller pass; returns ms until it wants another pass, or undefined when settled. */
  reconcile(): number | undefined;
}

export class ControllerScheduler {
  private readonly due = new Map<Reconcilable, number>();
  private timer: NodeJS.Timeout | undefined;
  private timerAt = Infinity;

  /** @param tickMs minimum spacing of passes for one cluster (keeps rollouts visible step by step). */
  constructor(readonly tickMs = 40) {}

  wake(c: Reconcilable, delayMs = this.tickMs): void {
    const at = Date.now() + Math.max(delayMs, 0);
    const cur = this.due.get(c);
    if (cur === undefined || at < cur) this.due.set(c, at);
    this.arm();
  }

  forget(c: Reconcilable): void {
    this.due.delete(c);
  }

  private arm(): void {
    let next = Infinity;
    for (const at of this.due.values()) if (at < next) next = at;
    if (next === Infinity || next >= this.timerAt) return;
    if (this.timer) clearTimeout(this.timer);
    this.timerAt = next;
    this.timer = setTimeout(() => this.run(), Math.max(0, next - Date.now()));
    this.timer.unref();
  }

  private run(): void {
    this.timer = undefined;
    this.timerAt = Infinity;
    const now = Date.now();
    const ready = [...this.due].filter(([, at]) => at <= now).map(([c]) => c);
    for (const c of ready) this.due.delete(c);
    for (const c of ready) {
      let again: number | undefined;
      try {
        again = c.reconcile();
      } catch (err) {
        // A controller bug must not stop every other cluster's controllers.
        console.error('kube-sim: controller pass failed:', err);
        again = 1000;
      }
      if (again !== undefined) this.wake(c, Math.max(again, this.tickMs));
    }
    this.arm();
  }
}

/** The process-wide scheduler used unless a cluster is given its own. */
export const sharedScheduler = new ControllerScheduler();
