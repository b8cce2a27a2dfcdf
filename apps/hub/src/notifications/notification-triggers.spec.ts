import { describe, expect, it } from 'vitest';
import { NOTIFICATION_TRIGGERS } from '@flotilla/fleet-config';
import { triggersOf, type AuditRecord } from './notification-triggers.js';

const event = (action: string, scope: string, details: Record<string, unknown> = {}): AuditRecord => ({
  id: 1n,
  at: new Date('2026-01-01T00:00:00Z'),
  actor: 'system:rollouts',
  action,
  scope,
  details,
});
const rev = 'a'.repeat(40);

/** Each audit event the hub records and the trigger it fires: every trigger of the catalogue is here. */
const CASES: [AuditRecord, string[]][] = [
  [event('sync.succeeded', 'target:web-eu-1', { revision: rev }), ['sync-succeeded', 'deployed']],
  [event('sync.failed', 'target:web-eu-1', { revision: rev, message: 'boom' }), ['sync-failed']],
  [event('sync.partial', 'target:web-eu-1', { revision: rev }), ['sync-failed']],
  [
    event('sync.blocked', 'target:web-eu-1', { revision: rev, message: 'blocked by window freeze' }),
    ['window-held'],
  ],
  [event('target.sync-requested', 'target:web-eu-1', { reason: 'hotfix', dryRun: false }), ['sync-running']],
  [event('target.sync-requested', 'target:web-eu-1', { reason: 'look', dryRun: true }), []],
  [event('health.changed', 'target:web-eu-1', { from: 'Healthy', to: 'Degraded' }), ['health-degraded']],
  [event('health.changed', 'target:web-eu-1', { from: 'Degraded', to: 'Healthy' }), []],
  [
    event('drift.detected', 'target:web-eu-1', { resource: { kind: 'ConfigMap', name: 'c' } }),
    ['drift-detected'],
  ],
  [event('drift.healed', 'target:web-eu-1'), ['healed']],
  [event('drift.contested', 'target:web-eu-1'), ['contested']],
  [event('drift.tolerated', 'target:web-eu-1'), []],
  [event('rollout.started', 'appset:web', { revision: rev }), ['rollout-started']],
  [
    event('rollout.released', 'appset:web', { revision: rev, step: 1, targets: ['a'] }),
    ['rollout-step-started'],
  ],
  [
    event('rollout.step-completed', 'appset:web', { revision: rev, step: 'canary', healthy: ['eu-1'] }),
    ['rollout-step-completed'],
  ],
  [event('rollout.halted', 'appset:web', { revision: rev, message: 'deadline' }), ['rollout-halted']],
  [event('rollout.completed', 'appset:web', { revision: rev }), ['rollout-completed']],
  [
    event('revision.failed', 'appset:web', { revision: rev, target: 'web-eu-1', reason: 'Degraded' }),
    ['automatic-rollback'],
  ],
  [event('fleet.deletion-held', 'fleet-source:f1'), ['deletion-guard-held']],
  [event('appset.expansion-held', 'appset:web'), ['deletion-guard-held']],
  [event('break-glass.opened', 'cluster:eu-1', { reason: 'incident' }), ['break-glass-opened']],
  [event('break-glass.closed', 'cluster:eu-1', { manualChanges: 2 }), ['break-glass-closed']],
  [event('break-glass.expired', 'cluster:eu-1', { manualChanges: 0 }), ['break-glass-expired']],
  [event('cluster.offline', 'cluster:eu-1', { lastSeenAt: '2026-01-01T00:00:00Z' }), ['agent-offline']],
  [
    event('fleet.rejected', 'fleet-source:f1', { commit: rev, code: 'invalid', message: 'bad' }),
    ['policy-refused'],
  ],
  [
    event('policy.denied', 'target:web-eu-1', { revision: rev, policy: 'allowed-registry', message: 'no' }),
    ['policy-refused'],
  ],
  [
    event('source.unverified', 'repository:https://git.example/web.git', {
      commit: rev,
      message: 'unsigned',
    }),
    ['policy-refused'],
  ],
  [event('policy.warned', 'target:web-eu-1', { revision: rev, policy: 'two-replicas' }), []],
  [event('token.created', 'token:ci'), []],
];

describe('the trigger catalogue', () => {
  it.each(CASES)('%o fires %o', (e, triggers) => {
    expect(triggersOf(e).map((h) => h.trigger)).toEqual(triggers);
  });

  it('covers every trigger a policy may name', () => {
    const fired = new Set(CASES.flatMap(([e]) => triggersOf(e).map((h) => h.trigger)));
    expect([...NOTIFICATION_TRIGGERS].filter((t) => !fired.has(t))).toEqual([]);
  });

  it('counts the manual changes made under a break-glass, as the hub records them', () => {
    const closed = triggersOf(event('break-glass.closed', 'cluster:eu-1', { manualChanges: 2 }));
    expect(closed[0]?.message).toBe('break-glass on cluster eu-1 closed; 2 manual change(s) recorded');
  });

  it('tells a refusal by an admission policy per target (digested per appset), a signature per commit', () => {
    const [denied] = triggersOf(
      event('policy.denied', 'target:web-eu-1', {
        revision: rev,
        policy: 'allowed-registry',
        message: 'images must come from registry.example.com',
      }),
    );
    expect(denied).toMatchObject({
      perTarget: true,
      message:
        'aaaaaaaaaaaa denied by admission policy allowed-registry: images must come from registry.example.com',
    });
    const [unsigned] = triggersOf(
      event('source.unverified', 'repository:https://git.example/web.git', {
        repository: 'https://git.example/web.git',
        commit: rev,
        message: 'commit is not signed',
      }),
    );
    expect(unsigned).toMatchObject({
      perTarget: false,
      message: 'commit aaaaaaaaaaaa of https://git.example/web.git refused: commit is not signed',
    });
  });

  it('deploys once per target and revision; a step starts once however many batches release it', () => {
    const a = triggersOf(event('sync.succeeded', 'target:web-eu-1', { revision: rev }))[1];
    const b = triggersOf(event('sync.succeeded', 'target:web-us-1', { revision: rev }))[1];
    expect(a?.oncePer).toBe(`deployed/web-eu-1/${rev}`);
    expect(b?.oncePer).not.toBe(a?.oncePer);
    const first = triggersOf(
      event('rollout.released', 'appset:web', { revision: rev, step: 0, targets: ['x'] }),
    );
    const second = triggersOf(
      event('rollout.released', 'appset:web', { revision: rev, step: 0, targets: ['y'] }),
    );
    expect(first[0]?.oncePer).toBe(second[0]?.oncePer);
    expect(first[0]?.perTarget).toBe(false);
  });
});
