import { describe, expect, it } from 'vitest';
import { HubError } from '../common/hub-error.js';
import {
  checkDeletionGuardSpec,
  deletionGuardLimit,
  evaluateDeletionGuard,
  nextGuardBaseline,
  preservesResourcesOnDeletion,
} from './deletion-guard.js';

describe('evaluateDeletionGuard', () => {
  it.each([
    // current, deleting, limit → wouldHold, deletePercent (no baseline recorded: the current count)
    [4, 3, 50, true, 75],
    [4, 2, 50, false, 50],
    [4, 1, 50, false, 25],
    [3, 1, 30, true, 33.3],
    [4, 4, 100, true, 100],
    [1, 1, 100, true, 100],
    [4, 0, 0, false, 0],
    [0, 0, 50, false, 0],
  ])('%i targets, %i deleted, limit %i %% → hold %s (%d %%)', (current, deleting, limit, hold, percent) => {
    expect(
      evaluateDeletionGuard({ current, deleting, after: current - deleting, baseline: null }, limit),
    ).toEqual({ wouldHold: hold, deletePercent: percent, limit, baseline: current });
  });

  it('holds a fleet walked down step by step: each step is judged against the baseline, not the current count', () => {
    // 100 → 50 → 25 → 13 → 7 at the default 50 %: every step deletes at most half of what is left.
    let baseline: number | null = null;
    let current = 100;
    const verdicts: string[] = [];
    for (const next of [50, 25, 13, 7]) {
      const v = evaluateDeletionGuard({ current, deleting: current - next, after: next, baseline }, 50);
      verdicts.push(`${current}→${next} ${v.wouldHold ? 'held' : 'ok'} ${v.deletePercent}`);
      if (v.wouldHold) break;
      baseline = nextGuardBaseline(v, next, false);
      current = next;
    }
    expect(verdicts).toEqual(['100→50 ok 50', '50→25 held 75']);
    expect(baseline).toBe(100);
  });

  it('a confirmation moves the baseline to what was confirmed; growth only raises it', () => {
    const held = evaluateDeletionGuard({ current: 50, deleting: 25, after: 25, baseline: 100 }, 50);
    expect(held).toMatchObject({ wouldHold: true, baseline: 100 });
    expect(nextGuardBaseline(held, 25, true)).toBe(25);
    const grown = evaluateDeletionGuard({ current: 25, deleting: 0, after: 40, baseline: 25 }, 50);
    expect(nextGuardBaseline(grown, 40, false)).toBe(40);
    // A shrink of 40 → 25 (37.5 %) is then within the limit.
    expect(evaluateDeletionGuard({ current: 40, deleting: 15, after: 25, baseline: 40 }, 50).wouldHold).toBe(
      false,
    );
  });

  it('replacing every target is still a hold, though the count stays', () => {
    expect(evaluateDeletionGuard({ current: 4, deleting: 4, after: 4, baseline: 4 }, 100).wouldHold).toBe(
      true,
    );
  });
});

describe('deletionGuardLimit', () => {
  it("reads Flotilla's spec.deletionGuard.maxDeletePercent, else the hub default", () => {
    const doc = (guard?: unknown) => ({
      apiVersion: 'flotilla.dev/v1alpha1',
      spec: guard === undefined ? {} : { deletionGuard: guard },
    });
    expect(deletionGuardLimit(doc({ maxDeletePercent: 80 }), 50)).toBe(80);
    expect(deletionGuardLimit(doc({}), 50)).toBe(50);
    expect(deletionGuardLimit(doc(), 30)).toBe(30);
  });

  it('never lets a stored value that is not a percentage disable the guard', () => {
    const doc = (v: unknown) => ({
      apiVersion: 'flotilla.dev/v1alpha1',
      spec: { deletionGuard: { maxDeletePercent: v } },
    });
    // "everything" > any share is false in JavaScript: read as the hub default instead.
    for (const v of ['everything', '80', null, Number.NaN, 150, -1])
      expect(deletionGuardLimit(doc(v), 50)).toBe(50);
  });

  it('gives Argo CD documents the hub default', () => {
    const argo = { apiVersion: 'argoproj.io/v1alpha1', spec: { deletionGuard: { maxDeletePercent: 90 } } };
    expect(deletionGuardLimit(argo, 50)).toBe(50);
  });
});

describe('checkDeletionGuardSpec', () => {
  it('accepts a missing guard and a percentage from 0 to 100', () => {
    expect(() => checkDeletionGuardSpec({ spec: {} })).not.toThrow();
    expect(() => checkDeletionGuardSpec({ spec: { deletionGuard: { maxDeletePercent: 0 } } })).not.toThrow();
    expect(() =>
      checkDeletionGuardSpec({ spec: { deletionGuard: { maxDeletePercent: 100 } } }),
    ).not.toThrow();
  });

  it.each([[150], ['50'], [-1]])('refuses maxDeletePercent %j, naming the field', (v) => {
    let err: unknown;
    try {
      checkDeletionGuardSpec({ spec: { deletionGuard: { maxDeletePercent: v } } });
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(HubError);
    expect(err).toMatchObject({
      status: 400,
      code: 'invalid-appset',
      path: 'spec.deletionGuard.maxDeletePercent',
    });
  });
});

describe('preservesResourcesOnDeletion', () => {
  it("reads Argo CD's syncPolicy flag", () => {
    expect(
      preservesResourcesOnDeletion({ spec: { syncPolicy: { preserveResourcesOnDeletion: true } } }),
    ).toBe(true);
    expect(preservesResourcesOnDeletion({ spec: {} })).toBe(false);
  });
});
