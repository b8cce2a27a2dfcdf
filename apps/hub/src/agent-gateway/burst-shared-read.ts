import type { ClusterWakeups } from '../wakeups/cluster-wakeups.service.js';

/**
 * One read of something every assignments computation needs and that rarely changes (named sync
 * windows, projects), shared by the computations of a burst — a release wakes a hundred long-polls
 * at once — instead of one read each.
 *
 * A computation for cluster C may use a read that started when `ClusterWakeups.stamp()` was S only
 * if no wake-up for C (nor a resubscription) arrived after S: a change that matters to C is
 * committed before its wake-up for C is published, so a read started after that wake-up arrived
 * sees it, and a wake-up arriving later makes C compute again anyway. Replicas share nothing but
 * the wake-ups, which every replica receives. A read is reused for at most `maxAgeMs`.
 */
export class BurstSharedRead<T> {
  private last: { stamp: number; at: number; value: Promise<T> } | undefined;

  constructor(
    private readonly read: () => Promise<T>,
    private readonly wakeups: ClusterWakeups,
    private readonly maxAgeMs = 2_000,
  ) {}

  get(clusterId: string, now = Date.now()): Promise<T> {
    const last = this.last;
    if (last && now - last.at < this.maxAgeMs && !this.wakeups.wokenSince(clusterId, last.stamp)) {
      return last.value;
    }
    const stamp = this.wakeups.stamp();
    const value = this.read();
    const entry = { stamp, at: now, value };
    this.last = entry;
    // A failed read is not shared: the next computation reads again.
    value.catch(() => {
      if (this.last === entry) this.last = undefined;
    });
    return value;
  }
}
