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
const CLUSTERS = 100;
/** 5 canaries, 30 early clusters, 65 in the main ring: the three steps of the rollout. */
const ringOf = (i: number) => (i < 5 ? 'canary' : i < 35 ? 'early' : 'main');
const clusterName = (i: number) => `c${String(i).padStart(3, '0')}`;
const configMap = (owner: string) =>
  `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web-config\ndata:\n  owner: ${owner}\n`;

interface Told {
  trigger: string;
  revision: string | null;
  count: number;
  events: { action: string; target: string | null; revision: string | null }[];
}

/**
 * The fleet-level view the issue asks for: a rollout to 100 clusters in 3 steps tells a subscription
 * on its appset at most 4 times (a message per step and a summary), not once per cluster. The hub
 * runs on PostgreSQL, Redis and Git; the 100 clusters register and report as their agents would
 * (the agent protocol spoken by hand, as the rollout specs do), and the receiver on 127.0.0.1
 * checks every message's HMAC.
 */
describe('a rollout to 100 clusters in 3 steps (PostgreSQL, Redis, Git, HTTP receiver)', () => {
  let repo: TestGitRepo;
  let hub: TestHub;
  let receiver: TestNotificationReceiver;
  const call = hubCaller(() => hub);
  let credentials = new Map<string, string>();
  const agent = <T>(cluster: string, method: string, path: string, body?: unknown) =>
    call<T>(method, path, body, { authorization: `Bearer ${credentials.get(cluster) ?? ''}` });
  /** Revision each cluster last reported synced and Healthy. */
  const reported = new Map<string, string>();

  /**
   * Every cluster polls once; a cluster served a revision it has not reported reports it synced
   * and Healthy, as its agent would after applying it. Returns how many clusters run `revision`.
   */
  const agentsRound = async (revision: string): Promise<number> => {
    const names = [...credentials.keys()];
    for (let i = 0; i < names.length; i += 10)
      await Promise.all(
        names.slice(i, i + 10).map(async (cluster) => {
          const polled = await agent<AssignmentsResponse>(cluster, 'GET', '/api/agent/v1/assignments');
          const [a] = polled.body.assignments;
          if (!a?.revision || reported.get(cluster) === a.revision) return;
          const reports = syncedReports(a, 'Healthy');
          const sent = await agent(cluster, 'POST', '/api/agent/v1/reports', { reports });
          expect(sent.status).toBe(200);
          reported.set(cluster, a.revision);
        }),
      );
    return [...reported.values()].filter((r) => r === revision).length;
  };
  const rolloutOf = async (revision: string) =>
    (await call<{ status: string }>('GET', `/api/v1/rollouts/web?revision=${revision}`)).body.status;

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
      Array.from({ length: CLUSTERS }, (_, i) => ({
        name: clusterName(i),
        labels: { fleet: 'web', ring: ringOf(i) },
      })),
    );
    const applied = await call('POST', '/api/v1/appsets', ringAppSet(repo.url, ['canary', 'early', 'main']));
    expect(applied.status).toBe(201);
  }, 300_000);
  afterAll(async () => {
    await hub?.close();
    await receiver?.close();
    repo?.remove();
  });

  it('rolls the first revision out to every cluster before anyone subscribes', async () => {
    const first = repo.head();
    await expect.poll(() => agentsRound(first), { timeout: 120_000, interval: 200 }).toBe(CLUSTERS);
    await expect.poll(() => rolloutOf(first), { timeout: 60_000 }).toBe('Completed');
  }, 200_000);

  it('tells a subscription on the appset at most 4 times: each step and a summary, no message per cluster', async () => {
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
    // Everything a healthy rollout fires, per cluster and per step.
    const subscribed = await call('POST', '/api/v1/notifications/policies', {
      apiVersion: 'flotilla.dev/v1alpha1',
      kind: 'NotificationPolicy',
      metadata: { name: 'web-rollouts' },
      spec: {
        triggers: [
          'rollout-started',
          'rollout-step-started',
          'rollout-step-completed',
          'rollout-completed',
          'sync-succeeded',
          'deployed',
          'sync-failed',
          'health-degraded',
        ],
        appSets: ['web'],
        destinations: ['team'],
        digestWindow: '10s',
      },
    });
    expect(subscribed.status).toBe(201);

    const second = repo.commit({ 'app/config.yaml': configMap('web-team') }, 'owner web-team');
    const repos = await call<{ id: string }[]>('GET', '/api/v1/repositories');
    for (const r of repos.body) await call('POST', `/api/v1/repositories/${r.id}/refresh`);
    await expect.poll(() => rolloutOf(second), { timeout: 60_000 }).toBe('Progressing');
    await expect
      .poll(
        async () => {
          await agentsRound(second);
          return rolloutOf(second);
        },
        { timeout: 240_000, interval: 200 },
      )
      .toBe('Completed');
    expect([...reported.values()].filter((r) => r === second)).toHaveLength(CLUSTERS);

    // Everything told about this revision, once the summary (the rollout completing) arrived.
    const told = () =>
      receiver
        .messages()
        .map((m) => ({
          ...(m.body as unknown as Told),
          signatureValid: m.signatureValid,
          accepted: m.accepted,
        }))
        .filter((m) => m.revision === second);
    await expect
      .poll(() => told().some((m) => m.trigger === 'rollout-completed'), { timeout: 60_000 })
      .toBe(true);
    const messages = told();
    const shown = JSON.stringify(messages.map((m) => [m.trigger, m.events.map((e) => e.target ?? e.action)]));
    expect(messages.length, shown).toBeGreaterThanOrEqual(1);
    expect(messages.length, shown).toBeLessThanOrEqual(4);
    expect(messages.every((m) => m.signatureValid && m.accepted === 1)).toBe(true);
    // The summary comes last, and between them the messages tell the whole rollout: started, each
    // of the 3 steps started and completed, completed — and not one cluster's sync on its own.
    expect(messages.at(-1)?.trigger).toBe('rollout-completed');
    const actions = messages.flatMap((m) => m.events.map((e) => e.action));
    expect(actions.filter((a) => a === 'rollout.started')).toHaveLength(1);
    expect(actions.filter((a) => a === 'rollout.released')).toHaveLength(3);
    expect(actions.filter((a) => a === 'rollout.step-completed')).toHaveLength(3);
    expect(actions.filter((a) => a === 'rollout.completed')).toHaveLength(1);
    expect(actions.filter((a) => a.startsWith('sync.'))).toEqual([]);

    // The deliveries API lists what was sent, and it is what the receiver took.
    const listed = async () => {
      const rows = (
        await call<{ status: string }[]>('GET', '/api/v1/notifications/deliveries?policy=web-rollouts')
      ).body;
      const taken = receiver.messages().filter((m) => m.body['policy'] === 'web-rollouts').length;
      return { sent: rows.filter((d) => d.status === 'Sent').length, all: rows.length, taken };
    };
    await expect
      .poll(
        async () => {
          const l = await listed();
          return l.sent === l.all && l.sent === l.taken;
        },
        { timeout: 30_000 },
      )
      .toBe(true);
  }, 400_000);
});
