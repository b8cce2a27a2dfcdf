import { describe, expect, it } from 'vitest';
import {
  emptyMemory,
  forgetOtherFailures,
  judgeHealth,
  recordApplied,
  failedEntry,
} from './rollback-decision.js';

const GOOD = { revision: 'a'.repeat(40), digest: 'sha256:good' };
const BAD = { revision: 'b'.repeat(40), digest: 'sha256:bad' };
const T0 = new Date('2026-12-02T10:00:00Z');
const at = (s: number) => new Date(T0.getTime() + s * 1000);

/** GOOD ran Healthy, then BAD was applied at T0. */
function afterBadApplied() {
  let m = recordApplied(emptyMemory(), GOOD, at(-600));
  m = judgeHealth(m, 'Healthy', 60, at(-500)).memory;
  return recordApplied(m, BAD, T0);
}

describe('automatic rollback decision', () => {
  it('remembers the bundle that was Healthy as the one to restore', () => {
    const m = judgeHealth(recordApplied(emptyMemory(), GOOD, T0), 'Healthy', 60, at(5)).memory;
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
    expect(judgeHealth(recordApplied(emptyMemory(), BAD, T0), 'Degraded', 60, at(999)).action).toBe('none');
    const healthy = judgeHealth(afterBadApplied(), 'Healthy', 60, at(999));
    expect(healthy.action).toBe('none');
    expect(healthy.memory.healthy).toEqual(BAD);
    expect(judgeHealth(afterBadApplied(), 'Suspended', 60, at(999)).action).toBe('none');
  });

  it('re-applying the same bundle does not restart its deadline', () => {
    const m = afterBadApplied();
    expect(recordApplied(m, BAD, at(30))).toBe(m);
  });

  it('forgets a failure once the hub assigns something else, so a deliberate retry applies again', () => {
    const v = judgeHealth(afterBadApplied(), 'Degraded', 60, at(61));
    expect(forgetOtherFailures(v.memory, BAD)).toBe(v.memory);
    expect(forgetOtherFailures(v.memory, GOOD).failed).toEqual([]);
  });
});
