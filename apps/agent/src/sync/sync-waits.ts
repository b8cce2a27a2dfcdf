import { type KubeObject } from '@flotilla/contract';
import { type ResourceHealth } from '../health/target-health.js';
import { idOf } from '../kube/kube-client.js';
import { sleep } from '../util/backoff.js';
import { SyncAborted, SyncTerminated } from './sync-errors.js';
import { DEFAULT_POLL_MS, DEFAULT_WAIT_TIMEOUT_MS, type SyncInput } from './sync-input.js';
import { describeRef, keyOf, refOfId } from './resource-ref.js';

/** Longest a wave waits for an object with its own progress deadline (one that has none set: 2^31-1 s). */
export const MAX_WAVE_WAIT_MS = 3_600_000;
/** Time for the object's controller to notice its deadline passed and say so. */
const PROGRESS_DEADLINE_GRACE_MS = 30_000;

/**
 * How long a wave waits for its objects: the agent's wave timeout, or longer where an object has its
 * own progress deadline (a Deployment's spec.progressDeadlineSeconds, 600 s unless set), so a
 * rollout is judged by its controller's verdict (Degraded) rather than cut short; at most an hour.
 */
export function waitBudgetMs(objects: readonly KubeObject[], timeoutMs: number): number {
  let budget = timeoutMs;
  for (const o of objects) {
    const deadline = (o['spec'] as { progressDeadlineSeconds?: unknown } | undefined)
      ?.progressDeadlineSeconds;
    if (typeof deadline === 'number' && deadline > 0)
      budget = Math.max(budget, Math.min(deadline * 1000 + PROGRESS_DEADLINE_GRACE_MS, MAX_WAVE_WAIT_MS));
  }
  return budget;
}

export function seconds(ms: number): string {
  return ms % 1000 === 0 ? `${ms / 1000} s` : `${(ms / 1000).toFixed(1)} s`;
}

/**
 * The waiting a run does, bounded by the wave timeout and woken when the agent stops or a person
 * terminates the run: for a wave to turn healthy, for hooks to finish, for an object to be gone.
 */
export class SyncWaits {
  readonly timeoutMs: number;
  private readonly pollMs: number;
  /** Wakes a wait when the agent stops or a person terminates the run. */
  private readonly wakeSignal: AbortSignal | undefined;

  constructor(private readonly input: SyncInput) {
    this.timeoutMs = input.waitTimeoutMs ?? DEFAULT_WAIT_TIMEOUT_MS;
    this.pollMs = input.pollMs ?? DEFAULT_POLL_MS;
    const signals = [input.signal, input.terminate].filter((x): x is AbortSignal => x !== undefined);
    this.wakeSignal = signals.length > 1 ? AbortSignal.any(signals) : signals[0];
  }

  /** A safe point: throws SyncTerminated once a person asked to terminate the run. */
  checkTerminated(): void {
    const t = this.input.terminate;
    if (t?.aborted) throw new SyncTerminated(typeof t.reason === 'string' ? t.reason : 'terminated');
  }

  /**
   * Waits until every object is Healthy or Suspended (or has no health rule), keeping what it read
   * in `live`. A Degraded object fails the wave at once; the wait is bounded by waitBudgetMs.
   * SyncAborted either way.
   */
  async waitHealthy(
    what: string,
    objects: readonly KubeObject[],
    live: Map<string, KubeObject>,
  ): Promise<void> {
    const pending = new Map(objects.map((o) => [keyOf(idOf(o)), o]));
    const budgetMs = waitBudgetMs(objects, this.timeoutMs);
    const deadline = Date.now() + budgetMs;
    for (;;) {
      /** Why each object still pending is not done yet, for the timeout message. */
      const last = new Map<string, string>();
      for (const [key, obj] of pending) {
        const id = idOf(obj);
        const current = await this.input.kube.get(id);
        if (!current) {
          last.set(key, `${describeRef(refOfId(id))} Missing`);
          continue;
        }
        live.set(key, current);
        const health = this.assess(current);
        if (!health || health.status === 'Healthy' || health.status === 'Suspended') {
          pending.delete(key);
          continue;
        }
        const said = `${describeRef(refOfId(id))} ${health.status}${health.message ? ` (${health.message})` : ''}`;
        // Degraded is the object's own verdict (a Deployment past its progress deadline, a crashing
        // Pod): waiting longer only delays the failure.
        if (health.status === 'Degraded') throw new SyncAborted(`${what} failed: ${said}`);
        last.set(key, said);
      }
      if (pending.size === 0) return;
      this.checkTerminated();
      if (Date.now() >= deadline || this.input.signal?.aborted) {
        const why = this.input.signal?.aborted
          ? 'the agent is stopping'
          : `not healthy after ${seconds(budgetMs)}`;
        throw new SyncAborted(`${what} ${why}: ${[...last.values()].join(', ')}`);
      }
      await sleep(this.pollMs, this.wakeSignal);
    }
  }

  /** Each hook's outcome, in order: finished well, failed, vanished, or still running at the deadline. */
  async waitFinished(hooks: readonly KubeObject[]): Promise<{ ok: boolean; message: string }[]> {
    const outcomes: ({ ok: boolean; message: string } | undefined)[] = hooks.map(() => undefined);
    const deadline = Date.now() + this.timeoutMs;
    for (;;) {
      for (const [i, hook] of hooks.entries()) {
        if (outcomes[i]) continue;
        const live = await this.input.kube.get(idOf(hook));
        if (!live) {
          outcomes[i] = { ok: false, message: 'deleted before it finished' };
          continue;
        }
        const health = this.assess(live);
        // A kind with no health rule (a ConfigMap as a hook) is done once it exists.
        if (!health || health.status === 'Healthy')
          outcomes[i] = { ok: true, message: health?.message ?? '' };
        else if (health.status === 'Degraded' || health.status === 'Unknown')
          outcomes[i] = { ok: false, message: health.message || health.status };
      }
      if (outcomes.every((o) => o !== undefined)) return outcomes;
      if (Date.now() >= deadline || this.input.signal?.aborted || this.input.terminate?.aborted) {
        const why = this.input.terminate?.aborted
          ? 'still running when the sync was terminated'
          : this.input.signal?.aborted
            ? 'the agent is stopping'
            : `did not finish within ${seconds(this.timeoutMs)}`;
        return outcomes.map((o) => o ?? { ok: false, message: why });
      }
      await sleep(this.pollMs, this.wakeSignal);
    }
  }

  /** Deletes a previous run's hook object, if any, and waits until it is really gone. */
  async deleteAndWait(obj: KubeObject): Promise<void> {
    const id = idOf(obj);
    if (!(await this.input.kube.delete(id))) return;
    const deadline = Date.now() + this.timeoutMs;
    while (await this.input.kube.get(id)) {
      this.checkTerminated();
      if (Date.now() >= deadline || this.input.signal?.aborted)
        throw new Error(`the previous ${id.kind} ${id.name} was not gone within ${seconds(this.timeoutMs)}`);
      await sleep(this.pollMs, this.wakeSignal);
    }
  }

  private assess(live: KubeObject): ResourceHealth | null {
    try {
      return this.input.health.assess(live);
    } catch (err) {
      return { status: 'Unknown', message: `health check failed: ${(err as Error).message}` };
    }
  }
}
