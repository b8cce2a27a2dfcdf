import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AssignmentsResponse } from '@flotilla/contract';
import { startTwoClusterFleet, type TwoClusterFleet } from '../testing/two-cluster-fleet.js';
import {
  startTestNotificationReceiver,
  type TestNotificationReceiver,
} from '../testing/test-notification-receiver.js';
import { startTestGitHostApi, type TestGitHostApi } from '../testing/test-git-host-api.js';
import { startTestSmtpServer, type TestSmtpServer } from '../testing/test-smtp-server.js';

const SECRET = 'a-shared-hmac-secret-of-the-team';
const configMap = (owner: string) =>
  `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web-config\ndata:\n  owner: ${owner}\n`;

/**
 * A failing rollout told end to end: the hub on PostgreSQL, Redis and Git, the agents' reports
 * spoken by hand, an HMAC-verifying receiver, an SMTP server and the commit-status APIs of GitHub,
 * GitLab and Gitea on 127.0.0.1. The commit goes pending while it rolls out; an agent's automatic rollback fails it,
 * halts the rollout, and the commit's status turns to failure, in each host's own words.
 */
describe('a failing rollout: messages and commit statuses (PostgreSQL, Redis, Git, receivers)', () => {
  let fleet: TwoClusterFleet;
  let receiver: TestNotificationReceiver;
  let github: TestGitHostApi;
  let relay: TestSmtpServer;
  const assignment = async (cluster: 'eu-1' | 'us-1') =>
    (await fleet.agent<AssignmentsResponse>(cluster, 'GET', '/api/agent/v1/assignments')).body.assignments[0];
  const report = async (cluster: 'eu-1' | 'us-1', fields: Record<string, unknown>) => {
    const a = await assignment(cluster);
    const at = new Date().toISOString();
    const r = {
      targetId: a?.targetId,
      at,
      id: randomUUID(),
      type: 'sync',
      revision: a?.revision,
      bundleDigest: a?.bundleDigest,
      trigger: 'auto',
      outcome: 'Succeeded',
      startedAt: at,
      finishedAt: at,
      ...fields,
    };
    const health = { targetId: a?.targetId, at, id: randomUUID(), type: 'health', status: 'Healthy' };
    expect(
      (await fleet.agent(cluster, 'POST', '/api/agent/v1/reports', { reports: [r, health] })).status,
    ).toBe(200);
  };

  beforeAll(async () => {
    [receiver, github, relay] = await Promise.all([
      startTestNotificationReceiver(SECRET, 'ok'),
      startTestGitHostApi(),
      startTestSmtpServer(),
    ]);
    fleet = await startTwoClusterFleet({
      FLOTILLA_SECRETS_KEY: 'ab'.repeat(32),
      ROLLOUT_TICK_SECONDS: '0.3',
    });
  }, 120_000);
  afterAll(async () => {
    await fleet?.close();
    await Promise.all([receiver?.close(), github?.close(), relay?.close()]);
  });

  it('goes pending, then failure on an automatic rollback, with the halt told once', async () => {
    // The first revision runs on both clusters (released at once: no strategy yet).
    const first = fleet.repo.head();
    await expect.poll(async () => (await assignment('eu-1'))?.revision, { timeout: 30_000 }).toBe(first);
    const firstDigest = (await assignment('eu-1'))?.bundleDigest;
    await report('eu-1', {});
    await report('us-1', {});

    for (const d of [
      { name: 'team', type: 'webhook', url: receiver.url, secret: SECRET },
      {
        name: 'oncall',
        type: 'email',
        host: relay.host,
        port: relay.port,
        tls: 'none',
        from: 'flotilla@example.com',
        to: ['oncall@example.com'],
      },
      {
        name: 'github',
        type: 'commit-status',
        provider: 'github',
        apiUrl: github.url,
        token: 'ghp_test',
        repository: 'acme/web',
      },
      {
        name: 'gitlab',
        type: 'commit-status',
        provider: 'gitlab',
        apiUrl: `${github.url}/api/v4`,
        token: 'glpat_test',
        repository: 'acme/platform/web',
      },
      {
        name: 'gitea',
        type: 'commit-status',
        provider: 'gitea',
        apiUrl: `${github.url}/api/v1`,
        token: 'gitea_test',
        repository: 'acme/web',
      },
    ])
      expect((await fleet.call('POST', '/api/v1/notifications/destinations', d)).status).toBe(201);
    const rolloutTriggers = [
      'rollout-started',
      'rollout-step-started',
      'rollout-step-completed',
      'rollout-completed',
      'rollout-halted',
      'automatic-rollback',
    ];
    for (const [name, destinations] of [
      ['team-rollouts', ['team', 'oncall']],
      ['web-statuses', ['github', 'gitlab', 'gitea']],
    ] as const)
      expect(
        (
          await fleet.call('POST', '/api/v1/notifications/policies', {
            apiVersion: 'flotilla.dev/v1alpha1',
            kind: 'NotificationPolicy',
            metadata: { name },
            spec: {
              triggers: rolloutTriggers,
              appSets: ['web'],
              destinations,
              digestWindow: '1s',
            },
          })
        ).status,
      ).toBe(201);

    const applied = await fleet.call('POST', '/api/v1/appsets', {
      apiVersion: 'flotilla.dev/v1alpha1',
      kind: 'ApplicationSet',
      metadata: { name: 'web' },
      spec: {
        generators: [{ list: { elements: [{ cluster: 'eu-1' }, { cluster: 'us-1' }] } }],
        template: {
          metadata: { name: 'web-{{cluster}}' },
          spec: {
            source: { repoURL: fleet.repo.url, targetRevision: 'main', path: 'app' },
            destination: { name: '{{cluster}}', namespace: 'web' },
          },
        },
        rollout: { steps: [{ name: 'all', selector: {}, maxUnavailable: '100%', progressDeadline: '10m' }] },
      },
    });
    expect(applied.status).toBe(200);

    const second = fleet.repo.commit({ 'app/config.yaml': configMap('web-team') }, 'owner web-team');
    const repos = await fleet.call<{ id: string }[]>('GET', '/api/v1/repositories');
    for (const r of repos.body) await fleet.call('POST', `/api/v1/repositories/${r.id}/refresh`);
    await expect.poll(async () => (await assignment('eu-1'))?.revision, { timeout: 30_000 }).toBe(second);
    const secondDigest = (await assignment('eu-1'))?.bundleDigest;
    // The commit is pending while it rolls out.
    const statusesOf = () => github.statuses().filter((s) => s.path === `/repos/acme/web/statuses/${second}`);
    await expect.poll(() => statusesOf().length, { timeout: 30_000 }).toBeGreaterThan(0);
    expect(statusesOf()[0]).toMatchObject({
      authorization: 'Bearer ghp_test',
      body: { state: 'pending', context: 'flotilla/web' },
    });

    // eu-1's agent rolls back on its own: the revision fails and the rollout halts.
    await report('eu-1', {
      trigger: 'rollback',
      revision: first,
      bundleDigest: firstDigest,
      rolledBackFrom: {
        revision: second,
        bundleDigest: secondDigest,
        reason: 'Degraded past its progress deadline',
      },
    });
    const toldOf = (trigger: string) =>
      receiver.messages().filter((m) => m.event === trigger && m.body['revision'] === second);
    await expect.poll(() => toldOf('rollout-halted').length, { timeout: 30_000 }).toBe(1);
    await expect.poll(() => toldOf('automatic-rollback').length, { timeout: 30_000 }).toBe(1);
    expect(String(toldOf('automatic-rollback')[0]?.body['text'])).toContain('web-eu-1 rolled back from');
    expect(String(toldOf('rollout-halted')[0]?.body['text'])).toContain('automatic rollback on eu-1');
    expect(receiver.messages().every((m) => m.signatureValid && m.accepted === 1)).toBe(true);
    // What the rollout told before it halted was its start, never its completion.
    expect(receiver.messages().some((m) => m.event === 'rollout-completed')).toBe(false);
    // The same by e-mail: the halt and the rollback once each, every mail a delivery that was Sent.
    const mailed = (trigger: string) => relay.accepted().filter((m) => m.event === trigger);
    await expect.poll(() => mailed('rollout-halted').length, { timeout: 30_000 }).toBe(1);
    await expect.poll(() => mailed('automatic-rollback').length, { timeout: 30_000 }).toBe(1);
    expect(mailed('automatic-rollback')[0]?.body).toContain('web-eu-1 rolled back from');
    expect(mailed('rollout-halted')[0]?.body).toContain('automatic rollback on eu-1');
    expect(mailed('rollout-completed')).toEqual([]);

    // The commit ends failed; every status set on it is one GitHub documents.
    await expect.poll(() => statusesOf().at(-1)?.body['state'], { timeout: 30_000 }).toBe('failure');
    expect(statusesOf().every((s) => ['pending', 'failure'].includes(String(s.body['state'])))).toBe(true);
    // Every delivery to the API is Sent (recorded just after the API answered), one status each.
    const deliveries = async (destination: string) =>
      (
        await fleet.call<{ status: string; lastError: string | null }[]>(
          'GET',
          `/api/v1/notifications/deliveries?destination=${destination}`,
        )
      ).body;
    await expect
      .poll(
        async () => {
          const rows = await deliveries('github');
          return rows.length === statusesOf().length && rows.every((d) => d.status === 'Sent');
        },
        { timeout: 30_000 },
      )
      .toBe(true);

    // GitLab: the project by its URL-encoded full path, a private token, "running" and "failed",
    // the status's name in `name`.
    const gitlab = () =>
      github.statuses().filter((s) => s.path === `/api/v4/projects/acme%2Fplatform%2Fweb/statuses/${second}`);
    await expect.poll(() => gitlab().at(-1)?.body['state'], { timeout: 30_000 }).toBe('failed');
    expect(gitlab()[0]).toMatchObject({
      privateToken: 'glpat_test',
      authorization: null,
      body: { state: 'running', name: 'flotilla/web' },
    });
    expect(gitlab().every((s) => ['running', 'failed'].includes(String(s.body['state'])))).toBe(true);
    // Gitea: GitHub's path under /api/v1, `token` authorization, GitHub's states.
    const gitea = () =>
      github.statuses().filter((s) => s.path === `/api/v1/repos/acme/web/statuses/${second}`);
    await expect.poll(() => gitea().at(-1)?.body['state'], { timeout: 30_000 }).toBe('failure');
    expect(gitea()[0]).toMatchObject({
      authorization: 'token gitea_test',
      body: { state: 'pending', context: 'flotilla/web' },
    });
    expect(gitea().every((s) => ['pending', 'failure'].includes(String(s.body['state'])))).toBe(true);
    for (const [destination, received] of [
      ['gitlab', gitlab],
      ['gitea', gitea],
      ['oncall', () => relay.accepted()],
    ] as const)
      await expect
        .poll(
          async () => {
            const rows = await deliveries(destination);
            return rows.length === received().length && rows.every((d) => d.status === 'Sent');
          },
          { timeout: 30_000 },
        )
        .toBe(true);
  }, 180_000);
});
