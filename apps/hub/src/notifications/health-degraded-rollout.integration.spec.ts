import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AssignmentsResponse } from '@flotilla/contract';
import { registerHandAgents, ringAppSet, syncedReports } from '../testing/hand-agents.js';
import { createTestGitRepo, type TestGitRepo } from '../testing/test-git-repo.js';
import { hubCaller, startTestHub, type TestHub } from '../testing/test-hub.js';
import {
  startTestNotificationReceiver,
  type TestNotificationReceiver,
} from '../testing/test-notification-receiver.js';

const SECRET = 'a-shared-hmac-secret-of-the-team';
const CLUSTERS = 12;
/** 2 canaries, then the 10 others: the two steps of the rollout. */
const ringOf = (i: number) => (i < 2 ? 'canary' : 'main');
const clusterName = (i: number) => `c${String(i).padStart(2, '0')}`;
const configMap = (owner: string) =>
  `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web-config\ndata:\n  owner: ${owner}\n`;
const CRASH = 'Deployment web: CrashLoopBackOff (owner web-team unknown)';

interface DegradedMessage {
  policy: string;
  trigger: string;
  title: string;
  text: string;
  count: number;
  appSet: string | null;
  revision: string | null;
  events: { action: string; target: string; cluster: string; revision: string | null; message: string }[];
}

/**
 * Health degraded during a rollout, told as a fleet manager should: the targets a step releases
 * that turn Degraded are one message per digest window for their appset, naming each target, its
 * cluster and the revision it degraded at — not a message per cluster. The hub runs on PostgreSQL,
 * Redis and Git; the 12 clusters speak the agent protocol by hand, and the receiver on 127.0.0.1
 * checks every message's HMAC.
 */
describe('health degraded during a rollout (PostgreSQL, Redis, Git, HTTP receiver)', () => {
  let repo: TestGitRepo;
  let hub: TestHub;
  let receiver: TestNotificationReceiver;
  const call = hubCaller(() => hub);
  let credentials = new Map<string, string>();
  const agent = <T>(cluster: string, method: string, path: string, body?: unknown) =>
    call<T>(method, path, body, { authorization: `Bearer ${credentials.get(cluster) ?? ''}` });
  /** Revision and health each cluster last reported. */
  const reported = new Map<string, string>();

  /**
   * Every cluster of `clusters` polls once; one served `revision` that has not reported it with the
   * health asked reports it synced with that health, as its agent would. Returns how many of them
   * run `revision` with that health.
   */
  const agentsRound = async (clusters: string[], revision: string, health: (c: string) => string) => {
    await Promise.all(
      clusters.map(async (cluster) => {
        const polled = await agent<AssignmentsResponse>(cluster, 'GET', '/api/agent/v1/assignments');
        const [a] = polled.body.assignments;
        const state = `${a?.revision ?? ''} ${health(cluster)}`;
        if (!a || a.revision !== revision || reported.get(cluster) === state) return;
        const reports = syncedReports(a, health(cluster), health(cluster) === 'Degraded' ? CRASH : '');
        const sent = await agent(cluster, 'POST', '/api/agent/v1/reports', { reports });
        expect(sent.status).toBe(200);
        reported.set(cluster, state);
      }),
    );
    return clusters.filter((c) => reported.get(c) === `${revision} ${health(c)}`).length;
  };
  const rollout = async (revision: string) =>
    (await call<{ status: string; message: string }>('GET', `/api/v1/rollouts/web?revision=${revision}`))
      .body;
  const all = Array.from({ length: CLUSTERS }, (_, i) => clusterName(i));
  const canaries = all.filter((_, i) => ringOf(i) === 'canary');
  const main = all.filter((_, i) => ringOf(i) === 'main');
  const degradedMessages = () =>
    receiver
      .messages()
      .filter((m) => m.event === 'health-degraded')
      .map((m) => ({ ...(m.body as unknown as DegradedMessage), signatureValid: m.signatureValid }));
  const deliveries = async () =>
    (
      await call<{ trigger: string; status: string; eventCount: number }[]>(
        'GET',
        '/api/v1/notifications/deliveries?policy=web-health',
      )
    ).body;

  beforeAll(async () => {
    repo = createTestGitRepo({ 'app/config.yaml': configMap('platform') });
    receiver = await startTestNotificationReceiver(SECRET, 'ok');
    hub = await startTestHub({
      FLOTILLA_SECRETS_KEY: 'ab'.repeat(32),
      ROLLOUT_TICK_SECONDS: '0.5',
      // Clusters poll only when the test moves them: none may count as offline meanwhile.
      CLUSTER_OFFLINE_SECONDS: '3600',
    });
    credentials = await registerHandAgents(
      call,
      all.map((name, i) => ({ name, labels: { fleet: 'web', ring: ringOf(i) } })),
      CLUSTERS,
    );
    const applied = await call('POST', '/api/v1/appsets', ringAppSet(repo.url, ['canary', 'main']));
    expect(applied.status).toBe(201);
  }, 300_000);
  afterAll(async () => {
    await hub?.close();
    await receiver?.close();
    repo?.remove();
  });

  let second = '';

  it('rolls the first revision out Healthy everywhere, then the team subscribes to the appset', async () => {
    const first = repo.head();
    await expect
      .poll(() => agentsRound(all, first, () => 'Healthy'), { timeout: 120_000, interval: 200 })
      .toBe(CLUSTERS);
    await expect.poll(async () => (await rollout(first)).status, { timeout: 60_000 }).toBe('Completed');
    expect(
      (
        await call('POST', '/api/v1/notifications/destinations', {
          name: 'team',
          type: 'webhook',
          url: receiver.url,
          secret: SECRET,
        })
      ).status,
    ).toBe(201);
    const subscribed = await call('POST', '/api/v1/notifications/policies', {
      apiVersion: 'flotilla.dev/v1alpha1',
      kind: 'NotificationPolicy',
      metadata: { name: 'web-health' },
      spec: {
        triggers: ['health-degraded', 'rollout-completed'],
        appSets: ['web'],
        destinations: ['team'],
        digestWindow: '3s',
      },
    });
    expect(subscribed.status).toBe(201);
  }, 200_000);

  it('tells the canaries degrading at the new revision in one message, and the step waits for them', async () => {
    second = repo.commit({ 'app/config.yaml': configMap('web-team') }, 'owner web-team');
    const repos = await call<{ id: string }[]>('GET', '/api/v1/repositories');
    for (const r of repos.body) await call('POST', `/api/v1/repositories/${r.id}/refresh`);
    await expect.poll(async () => (await rollout(second)).status, { timeout: 60_000 }).toBe('Progressing');
    await expect
      .poll(() => agentsRound(canaries, second, () => 'Degraded'), { timeout: 60_000, interval: 200 })
      .toBe(canaries.length);
    await expect
      .poll(async () => (await rollout(second)).message, { timeout: 30_000 })
      .toContain('waiting for c00 (Degraded), c01 (Degraded)');

    await expect.poll(() => degradedMessages().length, { timeout: 30_000 }).toBe(1);
    const [told] = degradedMessages();
    expect(told).toMatchObject({
      signatureValid: true,
      policy: 'web-health',
      trigger: 'health-degraded',
      title: 'health-degraded: web (2 events)',
      count: 2,
      appSet: 'web',
      revision: second,
    });
    expect(told?.text.split('\n').sort()).toEqual([
      `web-c00: Degraded: ${CRASH}`,
      `web-c01: Degraded: ${CRASH}`,
    ]);
    expect(told?.events.map((e) => [e.target, e.cluster, e.revision, e.action]).sort()).toEqual([
      ['web-c00', 'c00', second, 'health.changed'],
      ['web-c01', 'c01', second, 'health.changed'],
    ]);
    // The main ring has not been released: its clusters still run the first revision.
    expect(main.filter((c) => reported.get(c)?.startsWith(second))).toEqual([]);
  }, 120_000);

  it('tells the next step degrading as one message for its 10 clusters, and nothing twice', async () => {
    // The canaries recover; the rollout moves on and releases the main ring, which degrades.
    await expect
      .poll(() => agentsRound(canaries, second, () => 'Healthy'), { timeout: 60_000, interval: 200 })
      .toBe(canaries.length);
    await expect
      .poll(() => agentsRound(main, second, () => 'Degraded'), { timeout: 120_000, interval: 200 })
      .toBe(main.length);
    await expect
      .poll(async () => (await rollout(second)).message, { timeout: 30_000 })
      .toMatch(/^step main: 0\/10 cluster\(s\) synced and Healthy; waiting for c02 \(Degraded\)/);
    await expect.poll(() => degradedMessages().length, { timeout: 30_000 }).toBe(2);
    const told = degradedMessages()[1];
    expect(told).toMatchObject({
      signatureValid: true,
      title: 'health-degraded: web (10 events)',
      count: 10,
      appSet: 'web',
      revision: second,
    });
    expect(told?.events.map((e) => e.target).sort()).toEqual(main.map((c) => `web-${c}`));
    expect(told?.events.every((e) => e.revision === second && e.message === `Degraded: ${CRASH}`)).toBe(true);

    // Still Degraded at the next report (an agent restarted): no change, nothing told. The main ring
    // recovers and the rollout completes; its summary is told after every health event before it.
    for (const c of main) reported.delete(c);
    await expect
      .poll(() => agentsRound(main, second, () => 'Degraded'), { timeout: 60_000, interval: 200 })
      .toBe(main.length);
    await expect
      .poll(() => agentsRound(main, second, () => 'Healthy'), { timeout: 60_000, interval: 200 })
      .toBe(main.length);
    await expect.poll(async () => (await rollout(second)).status, { timeout: 60_000 }).toBe('Completed');
    await expect
      .poll(
        async () => {
          const rows = await deliveries();
          return (
            rows.some((d) => d.trigger === 'rollout-completed') && rows.every((d) => d.status === 'Sent')
          );
        },
        { timeout: 60_000 },
      )
      .toBe(true);
    const rows = await deliveries();
    expect(
      rows
        .filter((d) => d.trigger === 'health-degraded')
        .map((d) => d.eventCount)
        .sort((a, b) => a - b),
    ).toEqual([2, 10]);
    expect(degradedMessages()).toHaveLength(2);
  }, 300_000);
});
