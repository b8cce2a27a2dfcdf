import { describe, expect, it } from 'vitest';
import {
  emptyMemory,
  forgetOtherFailures,
  judgeHealth,
  recordApplied,
  failedEntry,
  rollbackMemorySchema,
} from './rollback-decision.js';

const GOOD = { revision: 'a'.repeat(40), digest: 'sha256:good' };
const BAD = { revision: 'b'.repeat(40), digest: 'sha256:bad' };
const T0 = new Date('2026-12-02T10:00:00Z');
const at = (s: number) => new Date(T0.getTime() + s * 1000);

/** GOOD ran Healthy, then BAD was applied at T0. */
function afterBadApplied() {
  let m = recordApplied(emptyMemory(), GOOD, at(-600), true);
  m = judgeHealth(m, 'Healthy', 60, at(-500)).memory;
  return recordApplied(m, BAD, T0, true);
}

describe('automatic rollback decision', () => {
  it('remembers the bundle that was Healthy as the one to restore', () => {
    const m = judgeHealth(recordApplied(emptyMemory(), GOOD, T0, true), 'Healthy', 60, at(5)).memory;
    expect(m.healthy).toEqual(GOOD);
  });

  it('waits until the deadline, saying when to look again', () => {
    const v = judgeHealth(afterBadApplied(), 'Degraded', 60, at(30));
    expect(v).toMatchObject({ action: 'none', recheckAt: at(60) });
  });

  it.each(['Degraded', 'Progressing', 'Missing'] as const)(
    'rolls back a revision still %s past its deadline',
    (status) => {
      const v = judgeHealth(afterBadApplied(), status, 60, at(61));
      expect(v.action).toBe('rollback');
      if (v.action !== 'rollback') return;
      expect(v.to).toEqual(GOOD);
      expect(v.from).toEqual(BAD);
      expect(v.reason).toBe(`${status} 60 s after revision bbbbbbbbbbbb was applied`);
      expect(failedEntry(v.memory, BAD)).toMatchObject({ ...BAD, reason: v.reason });
    },
  );

  it('never rolls back without a deadline (no strategy), without an earlier healthy bundle, or when Healthy', () => {
    expect(judgeHealth(afterBadApplied(), 'Degraded', undefined, at(999)).action).toBe('none');
    expect(judgeHealth(recordApplied(emptyMemory(), BAD, T0, true), 'Degraded', 60, at(999)).action).toBe(
      'none',
    );
    const healthy = judgeHealth(afterBadApplied(), 'Healthy', 60, at(999));
    expect(healthy.action).toBe('none');
    expect(healthy.memory.healthy).toEqual(BAD);
    expect(judgeHealth(afterBadApplied(), 'Suspended', 60, at(999)).action).toBe('none');
  });

  it('re-applying the same bundle does not restart its deadline', () => {
    const m = afterBadApplied();
    expect(recordApplied(m, BAD, at(30), true)).toBe(m);
  });

  it('forgets a failure once the hub assigns something else, so a deliberate retry applies again', () => {
    const v = judgeHealth(afterBadApplied(), 'Degraded', 60, at(61));
    expect(forgetOtherFailures(v.memory, BAD)).toBe(v.memory);
    expect(forgetOtherFailures(v.memory, GOOD).failed).toEqual([]);
  });

  it('never remembers a revision whose sync failed as the one to restore, however healthy it looks', () => {
    // BAD was applied by a Partial sync; the target then reads Healthy (what failed has no health).
    let m = recordApplied(emptyMemory(), GOOD, at(-600), true);
    m = judgeHealth(m, 'Healthy', 60, at(-500)).memory;
    m = recordApplied(m, BAD, T0, false);
    m = judgeHealth(m, 'Healthy', 60, at(10)).memory;
    expect(m.healthy).toEqual(GOOD);
    // A later successful sync of the same revision makes it one, keeping its deadline's start.
    m = recordApplied(m, BAD, at(20), true);
    expect(m.applied).toEqual({ ...BAD, at: T0.toISOString(), synced: true });
    expect(judgeHealth(m, 'Healthy', 60, at(30)).memory.healthy).toEqual(BAD);
  });

  it('reads a memory file written before `synced` existed as not synced', () => {
    const m = rollbackMemorySchema.parse({ healthy: GOOD, applied: { ...BAD, at: T0.toISOString() } });
    expect(judgeHealth(m, 'Healthy', 60, at(5)).memory.healthy).toEqual(GOOD);
  });
});
