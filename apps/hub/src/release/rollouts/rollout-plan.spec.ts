import { describe, expect, it } from 'vitest';
import {
  emptyProgress,
  planRollout,
  promoteRollout,
  type PlanState,
  type PlanTarget,
} from './rollout-plan.js';
import type { RolloutStrategy } from '../../desired-state/rollout-strategy.js';

const NEW = 'b'.repeat(40);
const OLD = 'a'.repeat(40);
const T0 = new Date('2026-12-02T10:00:00Z');
const at = (s: number) => new Date(T0.getTime() + s * 1000);

const strategy: RolloutStrategy = {
  steps: [
    {
      name: 'canary',
      selector: { matchLabels: { ring: 'canary' } },
      maxUnavailable: 1,
      bakeSeconds: 60,
      progressDeadlineSeconds: 300,
      failureBudget: 0,
    },
    {
      name: 'main',
      selector: { matchLabels: { ring: 'main' } },
      maxUnavailable: '50%',
      bakeSeconds: 0,
      progressDeadlineSeconds: 300,
      failureBudget: 1,
    },
  ],
};

/** A target of cluster `cluster` still on the old revision, its agent seen just now. */
function target(cluster: string, ring: string, over: Partial<PlanTarget> = {}): PlanTarget {
  return {
    name: `${cluster}-web`,
    cluster,
    clusterLabels: { ring },
    clusterLastSeenAt: T0,
    desiredRevision: NEW,
    bundleDigest: 'sha256:new',
    releasedRevision: OLD,
    releasedDigest: 'sha256:old',
    lastSyncedRevision: OLD,
    lastSyncedDigest: 'sha256:old',
    health: 'Healthy',
    pinnedAt: null,
    ...over,
  };
}
const released = { releasedRevision: NEW, releasedDigest: 'sha256:new' };
const healthyAtNew = {
  ...released,
  lastSyncedRevision: NEW,
  lastSyncedDigest: 'sha256:new',
  health: 'Healthy',
};

function start(): PlanState {
  return {
    stepIndex: 0,
    stepStartedAt: T0,
    bakeStartedAt: null,
    gateOpened: false,
    progress: emptyProgress(),
  };
}
const opts = (now: Date) => ({ now, offlineAfterSeconds: 120 });

describe('planRollout', () => {
  const fleet = [
    target('c0', 'canary'),
    target('m1', 'main'),
    target('m2', 'main'),
    target('m3', 'main'),
    target('m4', 'main'),
  ];

  it('releases the canary first, and only the canary', () => {
    const r = planRollout(strategy, start(), fleet, opts(T0));
    expect(r.status).toBe('Progressing');
    expect(r.release).toEqual(['c0-web']);
    expect(r.message).toBe('step canary: 0/1 cluster(s) synced and Healthy; waiting for c0 (Healthy)');
  });

  it('bakes once the canary is synced and Healthy, saying how long is left, then advances', () => {
    const first = planRollout(strategy, start(), fleet, opts(T0));
    const canaryDone = [target('c0', 'canary', healthyAtNew), ...fleet.slice(1)];
    const baking = planRollout(strategy, first.state, canaryDone, opts(at(20)));
    expect(baking.release).toEqual([]);
    expect(baking.message).toBe('step canary: 1/1 cluster(s) healthy, baking 60 s more');
    const later = planRollout(strategy, baking.state, canaryDone, opts(at(60)));
    expect(later.message).toBe('step canary: 1/1 cluster(s) healthy, baking 20 s more');
    const next = planRollout(strategy, later.state, canaryDone, opts(at(81)));
    expect(next.state.stepIndex).toBe(1);
    // 50 % of 4 clusters: two at a time.
    expect(next.release).toEqual(['m1-web', 'm2-web']);
    expect(next.events.map((e) => e.action)).toContain('rollout.step-completed');
  });

  it('restarts the bake when a canary turns unhealthy during it', () => {
    const canaryDone = [target('c0', 'canary', healthyAtNew), ...fleet.slice(1)];
    const baking = planRollout(strategy, start(), canaryDone, opts(at(10)));
    expect(baking.state.bakeStartedAt).toEqual(at(10));
    const sick = [target('c0', 'canary', { ...healthyAtNew, health: 'Degraded' }), ...fleet.slice(1)];
    const r = planRollout(
      strategy,
      {
        ...baking.state,
        progress: { ...baking.state.progress, released: { 'c0-web': at(5).toISOString() } },
      },
      sick,
      opts(at(40)),
    );
    expect(r.state.bakeStartedAt).toBeNull();
    expect(r.message).toContain('waiting for c0 (Degraded)');
  });

  it('halts when a released cluster misses its progress deadline and the budget is 0', () => {
    const first = planRollout(strategy, start(), fleet, opts(T0));
    const stuck = [target('c0', 'canary', { ...released, health: 'Progressing' }), ...fleet.slice(1)];
    expect(planRollout(strategy, first.state, stuck, opts(at(299))).status).toBe('Progressing');
    const r = planRollout(strategy, first.state, stuck, opts(at(301)));
    expect(r.status).toBe('Halted');
    expect(r.message).toBe(
      'step canary: 1 cluster(s) failed, failure budget 0: c0 (not synced and Healthy 300 s after release (health Progressing))',
    );
    expect(r.release).toEqual([]);
  });

  it('skips an offline cluster within the failure budget and records why', () => {
    const state: PlanState = { ...start(), stepIndex: 1 };
    const withOffline = [
      target('c0', 'canary', healthyAtNew),
      target('m1', 'main', { clusterLastSeenAt: at(-600) }),
      target('m2', 'main'),
    ];
    const r = planRollout(strategy, state, withOffline, opts(T0));
    expect(r.state.progress.skipped).toEqual({ 'm1-web': `offline since ${at(-600).toISOString()}` });
    expect(r.release).toEqual(['m2-web']);
    expect(r.events).toContainEqual({
      action: 'rollout.target-skipped',
      details: { target: 'm1-web', cluster: 'm1', reason: `offline since ${at(-600).toISOString()}` },
    });
  });

  it('waits for offline clusters beyond the budget, then halts at the step deadline', () => {
    const state: PlanState = { ...start(), stepIndex: 1 };
    const twoOffline = [
      target('m1', 'main', { clusterLastSeenAt: null }),
      target('m2', 'main', { clusterLastSeenAt: at(-600) }),
    ];
    const waiting = planRollout(strategy, state, twoOffline, opts(T0));
    expect(waiting.status).toBe('Progressing');
    expect(waiting.message).toContain('1 offline beyond failure budget 1: m2');
    const halted = planRollout(strategy, waiting.state, twoOffline, opts(at(301)));
    expect(halted.status).toBe('Halted');
  });

  it('leaves targets an admission policy denies alone, as pinned ones', () => {
    const denied = [target('c0', 'canary', { policyDenied: 'allowed-registry' }), target('m1', 'main')];
    const r = planRollout(strategy, start(), denied, opts(T0));
    expect(r.state.progress.skipped['c0-web']).toBe('denied by admission policy allowed-registry');
    expect(r.release).not.toContain('c0-web');
    expect(r.events).toContainEqual({
      action: 'rollout.target-skipped',
      details: { target: 'c0-web', reason: 'policy-denied' },
    });
  });

  it('leaves pinned targets alone', () => {
    const pinned = [target('c0', 'canary', { pinnedAt: OLD }), target('m1', 'main')];
    const r = planRollout(strategy, start(), pinned, opts(T0));
    expect(r.state.progress.skipped['c0-web']).toBe(`pinned at ${OLD.slice(0, 12)}`);
    // An empty canary step has nothing to bake: straight on to main.
    expect(r.release).toEqual(['m1-web']);
  });

  it('puts clusters no step selects in a last step, and completes', () => {
    const all = [target('c0', 'canary', healthyAtNew), target('x1', 'edge', healthyAtNew)];
    const r = planRollout(
      { steps: [{ ...strategy.steps[0]!, bakeSeconds: 0 }] },
      { ...start(), bakeStartedAt: at(-100) },
      all,
      opts(T0),
    );
    expect(r.status).toBe('Completed');
    expect(
      r.events.filter((e) => e.action === 'rollout.step-completed').map((e) => e.details['step']),
    ).toEqual(['canary', 'remaining']);
  });

  it('holds a manual gate (maxUnavailable 0) until promoted', () => {
    const gated: RolloutStrategy = { steps: [{ ...strategy.steps[0]!, maxUnavailable: 0 }] };
    const r = planRollout(gated, start(), [target('c0', 'canary')], opts(T0));
    expect(r.release).toEqual([]);
    expect(r.message).toBe('step canary is a manual gate: promote the rollout to release its 1 cluster(s)');
    const promoted = promoteRollout(gated, r.state, [target('c0', 'canary')], T0);
    expect(promoted.what).toBe('gate-opened');
    expect(planRollout(gated, promoted.state, [target('c0', 'canary')], opts(T0)).release).toEqual([
      'c0-web',
    ]);
  });

  it('promote on an ordinary step releases what it holds back and moves on', () => {
    const promoted = promoteRollout(strategy, start(), fleet, T0);
    expect(promoted).toMatchObject({ what: 'step-skipped', release: ['c0-web'] });
    expect(promoted.state.stepIndex).toBe(1);
  });
});
