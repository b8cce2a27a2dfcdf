import { describe, expect, it } from 'vitest';
import { TARGET_REASON_CODES, type TargetFacts, targetReason } from './target-reason.js';

const fine: TargetFacts = { automated: true, syncStatus: 'Synced', health: 'Healthy' };
const denial = {
  digest: 'sha256:00',
  revision: '0123456789abcdef',
  policy: 'allowed-registry',
  binding: 'allowed-registry',
  object: { apiVersion: 'apps/v1', kind: 'Deployment', namespace: 'shop', name: 'web' },
  message: 'images come from registry.example.com',
  denials: 1,
};

describe('targetReason', () => {
  it('gives no reason to a target Synced and Healthy', () => {
    expect(targetReason(fine)).toBeNull();
  });

  it('names the window and when it opens', () => {
    expect(
      targetReason({
        ...fine,
        syncStatus: 'OutOfSync',
        windowClosed: { window: 'eu-night-freeze', nextOpen: '2026-12-05T06:00:00.000Z' },
      }),
    ).toEqual({
      code: 'WindowClosed',
      message: 'blocked by window eu-night-freeze; next open 2026-12-05T06:00:00.000Z',
      window: 'eu-night-freeze',
      nextOpen: '2026-12-05T06:00:00.000Z',
    });
  });

  it('puts an offline agent before everything else it would explain', () => {
    const r = targetReason({
      ...fine,
      syncStatus: 'OutOfSync',
      health: 'Degraded',
      agentOffline: { lastSeenAt: '2026-12-04T01:00:00.000Z' },
      windowClosed: { window: 'w', nextOpen: null },
    });
    expect(r?.code).toBe('AgentOffline');
    expect(r?.since).toBe('2026-12-04T01:00:00.000Z');
  });

  it('produces each code of the list', () => {
    const out = 'OutOfSync' as const;
    const cases: TargetFacts[] = [
      { ...fine, agentOffline: { lastSeenAt: null } },
      {
        ...fine,
        deletion: { state: 'Pending', requestedBy: 'user:alice', reason: 'decommission', message: '' },
      },
      {
        ...fine,
        deletion: {
          state: 'Failed',
          requestedBy: 'user:alice',
          reason: 'x',
          message: 'PreDelete hook failed',
        },
      },
      { ...fine, generatorError: { message: 'bad template' } },
      { ...fine, deletionGuardHeld: { message: 'would delete 5 of 10' } },
      { ...fine, projectDenied: { message: 'namespace kube-system not allowed' } },
      { ...fine, sourceUnverified: { message: 'commit 1a2b3c4d5e6f: not signed (signer: unsigned)' } },
      { ...fine, policyDenied: denial },
      { ...fine, pin: { revision: 'abc', actor: 'token:ci', reason: 'incident' } },
      { ...fine, syncStatus: out, windowClosed: { window: 'w', nextOpen: null } },
      { ...fine, syncStatus: out, rolloutStep: { message: 'step 2 of 3' } },
      { ...fine, syncStatus: out, lastSync: { outcome: 'Failed', message: 'apply refused' } },
      { ...fine, syncStatus: out, automated: false },
      { ...fine, health: 'Progressing' },
      { ...fine, health: 'Degraded' },
    ];
    expect(cases.map((c) => targetReason(c)?.code)).toEqual([...TARGET_REASON_CODES]);
  });

  it('names the policy, binding and object of a PolicyDenied', () => {
    expect(targetReason({ ...fine, policyDenied: { ...denial, denials: 3 } })).toEqual({
      code: 'PolicyDenied',
      message:
        'policy allowed-registry (binding allowed-registry) denies Deployment shop/web at 0123456789ab: images come from registry.example.com (and 2 more denials); the previous revision keeps running',
      policy: 'allowed-registry',
      binding: 'allowed-registry',
      object: denial.object,
    });
  });

  it('says who asked for a deletion and why, and what stopped a failed one', () => {
    const deletion = { requestedBy: 'user:alice', reason: 'decommission', message: '' };
    expect(targetReason({ ...fine, deletion: { ...deletion, state: 'Pending' } })?.message).toBe(
      'being deleted with its objects (asked by user:alice: decommission); no longer synced',
    );
    expect(
      targetReason({
        ...fine,
        deletion: {
          ...deletion,
          state: 'Failed',
          message: 'PreDelete hook failed: Job web/drain; nothing deleted',
        },
      })?.message,
    ).toBe(
      'deletion failed: PreDelete hook failed: Job web/drain; nothing deleted; left as it is until a person asks again',
    );
  });

  it('names the failed sync of a manual target rather than asking for another sync', () => {
    const r = targetReason({
      ...fine,
      syncStatus: 'OutOfSync',
      automated: false,
      lastSync: { outcome: 'Partial', message: 'apply Deployment web: field is immutable' },
    });
    expect(r).toEqual({ code: 'SyncFailed', message: 'apply Deployment web: field is immutable' });
  });

  it('a sync a person terminated is SyncFailed with who stopped it, not ManualSyncRequired', () => {
    const r = targetReason({
      ...fine,
      syncStatus: 'OutOfSync',
      automated: false,
      lastSync: { outcome: 'Terminated', message: 'terminated by alice: wrong window' },
    });
    expect(r).toEqual({ code: 'SyncFailed', message: 'terminated by alice: wrong window' });
  });

  it('says "not within a year" rather than "no time" when no opening is known', () => {
    expect(
      targetReason({ ...fine, syncStatus: 'OutOfSync', windowClosed: { window: 'w', nextOpen: null } })
        ?.message,
    ).toBe('blocked by window w; next open not within a year');
  });
});
