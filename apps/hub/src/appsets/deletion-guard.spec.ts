import { describe, expect, it } from 'vitest';
import { HubError } from '../common/hub-error.js';
import {
  checkDeletionGuardSpec,
  deletionGuardLimit,
  evaluateDeletionGuard,
  preservesResourcesOnDeletion,
} from './deletion-guard.js';

describe('evaluateDeletionGuard', () => {
  it.each([
    // current, deleting, limit → wouldHold, deletePercent
    [4, 3, 50, true, 75],
    [4, 2, 50, false, 50],
    [4, 1, 50, false, 25],
    [3, 1, 30, true, 33.3],
    [4, 4, 100, true, 100],
    [1, 1, 100, true, 100],
    [4, 0, 0, false, 0],
    [0, 0, 50, false, 0],
  ])('%i targets, %i deleted, limit %i %% → hold %s (%d %%)', (current, deleting, limit, hold, percent) => {
    expect(evaluateDeletionGuard(current, deleting, limit)).toEqual({
      wouldHold: hold,
      deletePercent: percent,
      limit,
    });
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
