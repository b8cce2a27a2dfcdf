import { setTimeout as sleep } from 'node:timers/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type KubeObject } from '@flotilla/contract';
import { retryDelayMs } from './reconcile/sync-retry.js';
import { AgentHarness, loadFixture, pollOptions as poll } from './testing/agent-harness.js';

const manifests = loadFixture('bundle-web.yaml');
// A kind no API server here serves: the object fails every time, the rest of the bundle applies.
const widget: KubeObject = {
  apiVersion: 'example.com/v1',
  kind: 'Widget',
  metadata: { name: 'spinner' },
  spec: { size: 3 },
};
const failing = [...manifests, widget];
const retry = { limit: 2, backoff: { durationMs: 100, factor: 2, maxDurationMs: 400 } };
// Longer than every back-off of the policy above put together: a retry that was going to come has come.
const pastEveryBackoff = 1_500;

describe('agent: syncPolicy.retry bounds the retries of a failed sync (#14)', () => {
  let h: AgentHarness;
  beforeAll(async () => {
    h = await AgentHarness.start('retry');
  });
  afterAll(async () => {
    await h.stop();
  });

  const failedOf = (revision: string) =>
    h.syncs().filter((s) => s.revision === revision && (s.outcome === 'Failed' || s.outcome === 'Partial'));

  it('tries a failing revision 1 + limit times with back-off, says so, and then waits for a person or a new revision', async () => {
    const stateDir = join(h.dir, 'state');
    const digest = h.hub.addBundle(failing);
    const policy = { automated: true, selfHeal: true, prune: true, retry };
    h.hub.setAssignments([h.assignment({ bundleDigest: digest, syncPolicy: policy })]);
    const agent = await h.runAgent({ stateDir });

    await expect.poll(() => failedOf('rev-1').length, poll).toBe(3);
    await sleep(pastEveryBackoff);
    const runs = failedOf('rev-1');
    expect(runs).toHaveLength(3);
    expect(runs.map((r) => r.message.match(/retry \d of 2 in [\d.]+s|no retry left/)?.[0])).toEqual([
      'retry 1 of 2 in 0.1s',
      'retry 2 of 2 in 0.2s',
      'no retry left',
    ]);
    // Each retry waited out its back-off (the agent's own timestamps, so a slow machine only widens
    // the gap): an ordering of the reports, not a speed.
    const gaps = runs.slice(1).map((r, i) => Date.parse(r.startedAt) - Date.parse(runs[i]?.finishedAt ?? ''));
    gaps.forEach((gap, i) => expect(gap).toBeGreaterThanOrEqual(retryDelayMs(retry, i) - 10));

    // Self-heal does not retry it object by object either: drift is told, not healed.
    await h.edit('Deployment', 'web', { spec: { replicas: 5 } });
    await expect.poll(() => h.drifts('detected').some((d) => d.resource.name === 'web'), poll).toBe(true);
    await sleep(300);
    expect(await h.replicas()).toBe(5);
    expect(h.drifts('healed')).toHaveLength(0);

    // A restart does not hand out a fresh set of retries.
    await agent.stop();
    const restarted = await h.runAgent({ stateDir });
    await sleep(pastEveryBackoff);
    expect(failedOf('rev-1')).toHaveLength(3);

    // A sync a person asks for runs it again, with a fresh count.
    h.hub.setAssignments([
      h.assignment({
        bundleDigest: digest,
        syncPolicy: policy,
        operations: [{ id: 'op-retry-1', prune: false, requestedBy: 'user:ada', reason: 'after the fix' }],
      }),
    ]);
    await expect.poll(() => failedOf('rev-1').length, poll).toBe(6);
    const manual = failedOf('rev-1').find((r) => r.operationId === 'op-retry-1');
    expect(manual?.trigger).toBe('manual');
    expect(manual?.message).toContain('retry 1 of 2');
    await sleep(pastEveryBackoff);
    expect(failedOf('rev-1')).toHaveLength(6);

    // A new revision starts again at once, and one that succeeds heals as before.
    const fixed = h.hub.addBundle(manifests);
    h.hub.setAssignments([h.assignment({ bundleDigest: fixed, revision: 'rev-2', syncPolicy: policy })]);
    await expect.poll(() => h.syncs().at(-1)?.outcome, poll).toBe('Succeeded');
    expect(h.syncs().at(-1)?.revision).toBe('rev-2');
    expect(await h.replicas()).toBe(2);
    await restarted.stop();
  });

  it('limit 0 never retries; without a retry policy the default limit holds', async () => {
    const digest = h.hub.addBundle(failing);
    const none = { automated: true, selfHeal: true, prune: true, retry: { ...retry, limit: 0 } };
    h.hub.setAssignments([h.assignment({ bundleDigest: digest, revision: 'rev-10', syncPolicy: none })]);
    const agent = await h.runAgent({ stateDir: join(h.dir, 'state-none') });
    await expect.poll(() => failedOf('rev-10').length, poll).toBe(1);
    await sleep(pastEveryBackoff);
    expect(failedOf('rev-10')).toHaveLength(1);
    expect(failedOf('rev-10')[0]?.message).toContain('no retry left (retry limit 0)');

    // The default policy (limit 5, 5 s first): the first failure announces its retry.
    h.hub.setAssignments([h.assignment({ bundleDigest: digest, revision: 'rev-11' })]);
    await expect.poll(() => failedOf('rev-11').length, poll).toBe(1);
    expect(failedOf('rev-11')[0]?.message).toContain('retry 1 of 5 in 5s');
    await agent.stop();
  });
});
