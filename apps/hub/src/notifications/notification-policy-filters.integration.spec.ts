import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AssignmentsResponse } from '@flotilla/contract';
import { createTestGitRepo, type TestGitRepo } from '../testing/test-git-repo.js';
import { hubCaller, startTestHub, type TestHub } from '../testing/test-hub.js';
import {
  startTestNotificationReceiver,
  type TestNotificationReceiver,
} from '../testing/test-notification-receiver.js';

const SECRET = 'a-shared-hmac-secret-of-the-team';
const CLUSTERS = { 'eu-1': { region: 'eu', tier: 'prod' }, 'us-1': { region: 'us', tier: 'staging' } };
type Cluster = keyof typeof CLUSTERS;

interface Told {
  policy: string;
  trigger: string;
  title: string;
  events: { target: string; cluster: string; appSet: string; project: string; message: string }[];
}
interface DeliveryView {
  policy: string;
  trigger: string;
  status: string;
  eventCount: number;
}

const project = (name: string) =>
  `apiVersion: flotilla.dev/v1alpha1\nkind: Project\nmetadata:\n  name: ${name}\nspec:\n  description: ${name}\n  sourceRepos: ['*']\n  destinations: [{ clusterSelector: {}, namespace: ${name} }]\n`;
const appSet = (name: string, projectName: string, repoUrl: string) => `apiVersion: flotilla.dev/v1alpha1
kind: ApplicationSet
metadata:
  name: ${name}
spec:
  project: ${projectName}
  generators:
    - clusters:
        selector: {}
  template:
    metadata:
      name: '${name}-{{name}}'
    spec:
      source:
        repoURL: ${repoUrl}
        targetRevision: main
        path: app
      destination:
        name: '{{name}}'
        namespace: ${projectName}
`;
/** Team A's web appsets on production clusters: failures and health, nothing else. */
const prodWeb = (tier: string) => `apiVersion: flotilla.dev/v1alpha1
kind: NotificationPolicy
metadata:
  name: prod-web
spec:
  triggers: [sync-failed, health-degraded]
  appSets: ['web*']
  projects: [team-a]
  clusterSelector:
    matchLabels:
      tier: ${tier}
  destinations: [team]
  digestWindow: 0s
  template:
    title: '{{ .trigger }} on {{ .appSet }}'
`;
/** The api appset anywhere but production, drift included: a set-based selector. */
const STAGING_API = `apiVersion: flotilla.dev/v1alpha1
kind: NotificationPolicy
metadata:
  name: staging-api
spec:
  triggers: [sync-failed, drift-detected]
  appSets: [api]
  clusterSelector:
    matchExpressions:
      - { key: tier, operator: NotIn, values: [prod] }
  destinations: [team]
  digestWindow: 0s
`;

/**
 * A NotificationPolicy's filters as the fleet repository declares them, end to end on the real hub
 * (PostgreSQL, Redis, Git) with an HMAC-verifying receiver on 127.0.0.1: each event the agents
 * report reaches the policies whose trigger, appset globs, projects and cluster label selector all
 * hold, and no other; a commit that changes a filter changes the routing from then on.
 */
describe('NotificationPolicy filters declared in Git (PostgreSQL, Redis, Git, HTTP receiver)', () => {
  let hub: TestHub;
  let fleetRepo: TestGitRepo;
  let appRepo: TestGitRepo;
  let receiver: TestNotificationReceiver;
  const call = hubCaller(() => hub);
  const credentials = new Map<Cluster, string>();
  const agent = <T>(cluster: Cluster, method: string, path: string, body?: unknown) =>
    call<T>(method, path, body, { authorization: `Bearer ${credentials.get(cluster) ?? ''}` });
  const appliedCommit = async () => {
    const [s] = (
      await call<{ appliedCommit: string | null; status: string }[]>('GET', '/api/v1/fleet-sources')
    ).body;
    return `${s?.status ?? '-'} ${s?.appliedCommit ?? '-'}`;
  };
  /** One report about `target` from its cluster's agent (a sync by default); the revision it runs. */
  const report = async (target: string, fields: Record<string, unknown>): Promise<string> => {
    const cluster: Cluster = target.endsWith('-eu-1') ? 'eu-1' : 'us-1';
    const polled = await agent<AssignmentsResponse>(cluster, 'GET', '/api/agent/v1/assignments');
    const a = polled.body.assignments.find((x) => x.name === target);
    expect(a, `${target} is assigned to ${cluster}`).toBeDefined();
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
    expect((await agent(cluster, 'POST', '/api/agent/v1/reports', { reports: [r] })).status).toBe(200);
    return a?.revision.slice(0, 12) ?? '';
  };
  const failed = (target: string, message: string) => report(target, { outcome: 'Failed', message });
  const deliveries = async (policy: string) =>
    (await call<DeliveryView[]>('GET', `/api/v1/notifications/deliveries?policy=${policy}`)).body;
  const told = (policy: string) =>
    receiver
      .messages()
      .filter((m) => m.body['policy'] === policy)
      .map((m) => ({ ...(m.body as unknown as Told), signatureValid: m.signatureValid }));
  /** What a policy was told, as `trigger target: message` lines, once `expected` deliveries went out. */
  const toldLines = async (policy: string, expected: number) => {
    await expect
      .poll(
        async () => {
          const rows = await deliveries(policy);
          return rows.length >= expected && rows.every((d) => d.status === 'Sent');
        },
        { timeout: 30_000 },
      )
      .toBe(true);
    await expect.poll(() => told(policy).length, { timeout: 30_000 }).toBe((await deliveries(policy)).length);
    expect(told(policy).every((m) => m.signatureValid)).toBe(true);
    return told(policy)
      .flatMap((m) => m.events.map((e) => `${m.trigger} ${e.target}: ${e.message}`))
      .sort();
  };

  beforeAll(async () => {
    appRepo = createTestGitRepo({
      'app/config.yaml': 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app-config\ndata:\n  a: "1"\n',
    });
    fleetRepo = createTestGitRepo({
      'fleet/projects.yaml': `${project('team-a')}---\n${project('team-b')}`,
    });
    receiver = await startTestNotificationReceiver(SECRET, 'ok');
    hub = await startTestHub({
      FLEET_REPOSITORIES: `${fleetRepo.url}#main:fleet`,
      FLOTILLA_SECRETS_KEY: 'ab'.repeat(32),
      CLUSTER_OFFLINE_SECONDS: '3600',
    });
    for (const [name, labels] of Object.entries(CLUSTERS) as [Cluster, Record<string, string>][]) {
      const created = await call<{ bootstrapToken: string }>('POST', '/api/v1/clusters', { name, labels });
      expect(created.status).toBe(201);
      const registered = await call<{ credential: string }>('POST', '/api/agent/v1/register', {
        clusterName: name,
        bootstrapToken: created.body.bootstrapToken,
      });
      expect(registered.status).toBe(200);
      credentials.set(name, registered.body.credential);
    }
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
  }, 120_000);
  afterAll(async () => {
    await hub?.close();
    await receiver?.close();
    fleetRepo?.remove();
    appRepo?.remove();
  });

  it('applies the appsets and the policies with one commit', async () => {
    const commit = fleetRepo.commit(
      {
        'fleet/appsets.yaml': [
          appSet('web', 'team-a', appRepo.url),
          appSet('web-legacy', 'team-b', appRepo.url),
          appSet('api', 'team-b', appRepo.url),
        ].join('---\n'),
        'fleet/notify.yaml': `${prodWeb('prod')}---\n${STAGING_API}`,
      },
      'web, web-legacy and api, told to the team',
    );
    await expect.poll(appliedCommit, { timeout: 60_000, interval: 250 }).toBe(`Ready ${commit}`);
    const policies = await call<{ metadata: { name: string }; managedBy: string }[]>(
      'GET',
      '/api/v1/notifications/policies',
    );
    expect(policies.body.map((p) => [p.metadata.name, p.managedBy])).toEqual([
      ['prod-web', 'git'],
      ['staging-api', 'git'],
    ]);
    // Six targets, each rendered (so its cluster is assigned it).
    await expect
      .poll(
        async () =>
          (await call<{ name: string; bundleDigest: string | null }[]>('GET', '/api/v1/targets')).body
            .filter((t) => t.bundleDigest)
            .map((t) => t.name)
            .sort(),
        { timeout: 60_000, interval: 250 },
      )
      .toEqual(['api-eu-1', 'api-us-1', 'web-eu-1', 'web-legacy-eu-1', 'web-legacy-us-1', 'web-us-1']);
  }, 90_000);

  it('routes each event to the policies whose trigger, appsets, projects and cluster selector hold', async () => {
    // Each dropped by one filter of prod-web (cluster tier, project, appset, trigger) ...
    await failed('web-us-1', 'quota on us-1');
    await failed('web-legacy-eu-1', 'quota on legacy');
    await failed('api-eu-1', 'quota on api eu');
    await report('web-eu-1', {
      type: 'drift',
      state: 'detected',
      resource: { group: '', kind: 'ConfigMap', namespace: 'team-a', name: 'app-config' },
      paths: ['/data/a'],
    });
    // ... and by one of staging-api's (appset, cluster tier, trigger) or heard by it.
    await report('api-us-1', {
      type: 'drift',
      state: 'detected',
      resource: { group: '', kind: 'ConfigMap', namespace: 'team-b', name: 'app-config' },
      paths: ['/data/a'],
    });
    await report('api-us-1', { type: 'health', status: 'Degraded', message: 'api down' });
    // What prod-web hears, reported last: events are matched in the audit log's order, so once these
    // are told, every event above has been matched too.
    const revision = await failed('web-eu-1', 'quota on eu-1');
    await report('web-eu-1', { type: 'health', status: 'Degraded', message: 'CrashLoopBackOff' });

    expect(await toldLines('prod-web', 2)).toEqual([
      'health-degraded web-eu-1: Degraded: CrashLoopBackOff',
      `sync-failed web-eu-1: sync failed at ${revision}: quota on eu-1`,
    ]);
    expect(
      told('prod-web')
        .map((m) => m.title)
        .sort(),
    ).toEqual(['health-degraded on web', 'sync-failed on web']);
    expect(told('prod-web')[0]?.events[0]).toMatchObject({
      cluster: 'eu-1',
      appSet: 'web',
      project: 'team-a',
    });
    expect(await toldLines('staging-api', 1)).toEqual([
      'drift-detected api-us-1: drift detected on ConfigMap team-b/app-config',
    ]);
  }, 90_000);

  it('routes by the new filter once a commit changes it', async () => {
    const before = { prodWeb: told('prod-web').length, stagingApi: (await deliveries('staging-api')).length };
    const commit = fleetRepo.commit(
      { 'fleet/notify.yaml': `${prodWeb('staging')}---\n${STAGING_API}` },
      'web: staging',
    );
    await expect.poll(appliedCommit, { timeout: 60_000, interval: 250 }).toBe(`Ready ${commit}`);
    const stored = await call<{ spec: { clusterSelector: unknown }; sourceCommit: string }>(
      'GET',
      '/api/v1/notifications/policies/prod-web',
    );
    expect(stored.body).toMatchObject({
      sourceCommit: commit,
      spec: { clusterSelector: { matchLabels: { tier: 'staging' } } },
    });

    await failed('web-eu-1', 'quota on eu-1 again');
    await failed('api-eu-1', 'quota on api eu again');
    const revision = await failed('web-us-1', 'quota on us-1 again');
    expect((await toldLines('prod-web', before.prodWeb + 1)).filter((l) => l.includes('again'))).toEqual([
      `sync-failed web-us-1: sync failed at ${revision}: quota on us-1 again`,
    ]);
    expect(await deliveries('staging-api')).toHaveLength(before.stagingApi);
  }, 90_000);
});
