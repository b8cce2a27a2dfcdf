import { describe, expect, it } from 'vitest';
import { judgeDeletions } from './deletion-hold.js';
import type { FleetPlan, ManagedEntry } from './fleet-plan.js';

const entry = (kind: string, name: string, fleetSourceId = 's1'): ManagedEntry => ({
  kind,
  name,
  fleetSourceId,
  file: `${name}.yaml`,
  object: {},
});
const managed = [
  entry('Project', 'a'),
  entry('Project', 'b'),
  entry('Project', 'c'),
  entry('Project', 'd'),
  entry('Project', 'other', 's2'),
];
const plan = (deleted: ManagedEntry[]): FleetPlan => ({
  create: [],
  update: [],
  unchanged: [],
  delete: deleted,
  conflicts: [],
});
const commit = 'f'.repeat(40);
const judge = (deleted: ManagedEntry[], over: Partial<Parameters<typeof judgeDeletions>[0]> = {}) =>
  judgeDeletions({
    sourceId: 's1',
    commit,
    plan: plan(deleted),
    managed,
    targets: { current: 0, deleting: 0 },
    baseline: null,
    limit: 30,
    confirmed: false,
    ...over,
  });

describe('judgeDeletions', () => {
  it('lets a commit within the limit through, counting only the objects of its own source', () => {
    // 1 of this source's 4 objects is 25 %, under 30 % (the other source's object does not count).
    expect(judge([entry('Project', 'a')]).held).toBeNull();
  });

  it('holds a commit past the limit, naming what it would delete and how to confirm it', () => {
    const { held } = judge([entry('Project', 'b'), entry('Project', 'a')]);
    expect(held?.pending).toMatchObject({
      commit,
      delete: ['Project/a', 'Project/b'],
      currentCount: 4,
      deletePercent: 50,
      limit: 30,
    });
    expect(held?.error.code).toBe('deletion-held');
    expect(held?.error.message).toContain('would delete 2 of 4 objects (50 %)');
    expect(held?.error.message).toContain(`POST /api/v1/fleet-sources/s1/confirm {"commit": "${commit}"`);
  });

  it('holds a commit that deletes most targets though few objects, against the baseline', () => {
    const { held } = judge([entry('ApplicationSet', 'a')], {
      targets: { current: 3, deleting: 2 },
      baseline: 3,
      limit: 30,
    });
    expect(held?.pending.targets).toEqual({ current: 3, deleting: 2, baseline: 3, deletePercent: 66.7 });
  });

  it('applies a confirmed commit, and the baseline becomes what was confirmed', () => {
    const judged = judge([entry('ApplicationSet', 'a')], {
      targets: { current: 3, deleting: 2 },
      baseline: 3,
      confirmed: true,
    });
    expect(judged.held).toBeNull();
    expect(judged.guardBaseline).toBe(1);
  });
});
