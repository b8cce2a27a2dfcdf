import { describe, expect, it } from 'vitest';
import type { ClusterWakeups } from '../wakeups/cluster-wakeups.service.js';
import { BurstSharedRead } from './burst-shared-read.js';

/** ClusterWakeups' bookkeeping only: a sequence of wake-ups received, per cluster. */
class WakeLog {
  seq = 0;
  readonly wokenAt = new Map<string, number>();
  wake(id: string): void {
    this.wokenAt.set(id, ++this.seq);
  }
  stamp(): number {
    return this.seq;
  }
  wokenSince(id: string, stamp: number): boolean {
    return (this.wokenAt.get(id) ?? 0) > stamp;
  }
}

describe('BurstSharedRead', () => {
  const setup = () => {
    const log = new WakeLog();
    let reads = 0;
    const shared = new BurstSharedRead(
      () => Promise.resolve(++reads),
      log as unknown as ClusterWakeups,
      2_000,
    );
    return { log, shared, reads: () => reads };
  };

  it('shares one read among clusters woken before it started', async () => {
    const { log, shared, reads } = setup();
    log.wake('a');
    log.wake('b');
    expect(await shared.get('a', 1_000)).toBe(1);
    expect(await shared.get('b', 1_100)).toBe(1);
    expect(await shared.get('c', 1_200)).toBe(1);
    expect(reads()).toBe(1);
  });

  it('reads again for a cluster woken after the shared read started, and once it is too old', async () => {
    const { log, shared, reads } = setup();
    expect(await shared.get('a', 1_000)).toBe(1);
    log.wake('b'); // a change that matters to b was committed after the read began
    expect(await shared.get('b', 1_100)).toBe(2);
    expect(await shared.get('a', 1_200)).toBe(2); // the newer read serves a as well
    expect(await shared.get('a', 3_200)).toBe(3); // 2 s later: read again
    expect(reads()).toBe(3);
  });

  it('does not share a failed read', async () => {
    const log = new WakeLog();
    let calls = 0;
    const shared = new BurstSharedRead(
      () => (++calls === 1 ? Promise.reject(new Error('gone')) : Promise.resolve(calls)),
      log as unknown as ClusterWakeups,
    );
    await expect(shared.get('a', 1_000)).rejects.toThrow('gone');
    expect(await shared.get('a', 1_001)).toBe(2);
  });
});
