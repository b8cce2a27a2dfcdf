import 'reflect-metadata';
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AssignmentsResponse } from '@flotilla/contract';
import {
  createTestGitRepo,
  hubCaller,
  startTestHub,
  startTestNotificationReceiver,
  waitForIdleQueues,
  type TestGitRepo,
  type TestHub,
  type TestNotificationReceiver,
} from '../../testing/index.js';

// The release gate on the real hub (PostgreSQL, Redis, Git): the fleet repository's admission
// policies judge each target's new bundle before release. A Deny holds the target at its previous
// revision with the reason PolicyDenied; a binding scoped to env=prod holds only prod; Warn does not
// hold; fixing the commit releases it. A denial is told to the team (policy-refused, one message
// per appset however many targets it holds) through an HMAC-verifying receiver on 127.0.0.1.

const poll = { timeout: 60_000, interval: 250 };
const CLI = fileURLToPath(new URL('../../../../cli/dist/main.js', import.meta.url));

const deployment = (image: string, replicas = 1) =>
  [
    'apiVersion: apps/v1',
    'kind: Deployment',
    'metadata: {name: web}',
    'spec:',
    `  replicas: ${replicas}`,
    '  selector: {matchLabels: {app: web}}',
    '  template:',
    '    metadata: {labels: {app: web}}',
    '    spec:',
    `      containers: [{name: web, image: ${JSON.stringify(image)}}]`,
    '',
  ].join('\n');

const APPSET = (repoUrl: string) => `apiVersion: flotilla.dev/v1alpha1
kind: ApplicationSet
metadata: {name: web}
spec:
  generators: [{clusters: {}}]
  template:
    metadata: {name: 'web-{{name}}'}
    spec:
      source: {repoURL: ${repoUrl}, targetRevision: main, path: app}
      destination: {name: '{{name}}', namespace: web}
`;

const CLUSTERS = `apiVersion: flotilla.dev/v1alpha1
kind: ClusterGroup
metadata: {name: production}
spec: {clusters: [c1], labels: {env: prod}}
---
apiVersion: flotilla.dev/v1alpha1
kind: ClusterGroup
metadata: {name: staging}
spec: {clusters: [c2], labels: {env: staging}}
`;

const RULES = `resourceRules: [{apiGroups: [apps], apiVersions: [v1], operations: [CREATE, UPDATE], resources: [deployments]}]`;

/** The registry policy (Deny, on `selector` clusters when given) and a Warn about too few replicas. */
const policies = (selector?: string, breakGlass = false) => `apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata:
  name: allowed-registry
${breakGlass ? '  annotations: {flotilla.dev/break-glass: allow}\n' : ''}spec:
  matchConstraints: {${RULES}}
  validations:
    - expression: "object.spec.template.spec.containers.all(c, c.image.startsWith('registry.example.com/'))"
      message: images must come from registry.example.com
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata:
  name: allowed-registry
${selector ? `  annotations: {flotilla.dev/cluster-selector: ${JSON.stringify(selector)}}\n` : ''}spec: {policyName: allowed-registry, validationActions: [Deny]}
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: two-replicas}
spec:
  matchConstraints: {${RULES}}
  validations:
    - expression: object.spec.replicas >= 2
      message: run at least two replicas
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: two-replicas}
spec: {policyName: two-replicas, validationActions: [Warn]}
`;

interface TargetView {
  name: string;
  desiredRevision: string;
  releasedRevision: string | null;
  reason: { code: string; message: string; policy?: string; binding?: string; object?: unknown } | null;
}

interface AuditItem {
  action: string;
  scope: string;
  details: Record<string, unknown>;
}

describe('admission policies gate releases', () => {
  let hub: TestHub;
  let fleetRepo: TestGitRepo;
  let appRepo: TestGitRepo;
  let receiver: TestNotificationReceiver;
  const call = hubCaller(() => hub);
  const credentials: Record<string, string> = {};
  const HMAC_SECRET = 'a-shared-hmac-secret-of-the-team';

  const targets = async (): Promise<Record<string, TargetView>> => {
    const list = await call<TargetView[]>('GET', '/api/v1/targets?appSet=web');
    return Object.fromEntries(list.body.map((t) => [t.name, t]));
  };
  /** `released/desired reason` of a target, short shas, for polling. */
  const stateOf = async (name: string): Promise<string> => {
    const t = (await targets())[name];
    if (!t) return 'absent';
    const short = (s: string | null) => s?.slice(0, 7) ?? '-';
    return `${short(t.releasedRevision)}/${short(t.desiredRevision)} ${t.reason?.code ?? '-'}`;
  };
  const audit = async (action: string): Promise<AuditItem[]> =>
    (await call<{ items: AuditItem[] }>('GET', `/api/v1/audit?action=${action}&limit=100`)).body.items;
  const assignmentsOf = async (cluster: string) =>
    (
      await call<AssignmentsResponse>('GET', '/api/agent/v1/assignments?wait=0', undefined, {
        authorization: `Bearer ${credentials[cluster] ?? ''}`,
      })
    ).body.assignments;
  /** The agents are alive: a long-poll answered at once keeps each cluster seen. */
  const heartbeat = async () => {
    for (const name of ['c1', 'c2'])
      await call('GET', '/api/agent/v1/assignments?wait=0', undefined, {
        authorization: `Bearer ${credentials[name] ?? ''}`,
      });
  };

  beforeAll(async () => {
    appRepo = createTestGitRepo({ 'app/deploy.yaml': deployment('registry.example.com/web:1') });
    fleetRepo = createTestGitRepo({
      'fleet/clusters.yaml': CLUSTERS,
      'fleet/web.yaml': APPSET(appRepo.url),
      'fleet/policies.yaml': policies(),
    });
    receiver = await startTestNotificationReceiver(HMAC_SECRET, 'ok');
    hub = await startTestHub({
      FLEET_REPOSITORIES: `${fleetRepo.url}#main:fleet`,
      CLUSTER_OFFLINE_SECONDS: '3600',
      METRICS_REASONS_MAX_AGE_SECONDS: '0',
      FLOTILLA_SECRETS_KEY: 'ab'.repeat(32),
    });
    const destination = await call('POST', '/api/v1/notifications/destinations', {
      name: 'team',
      type: 'webhook',
      url: receiver.url,
      secret: HMAC_SECRET,
    });
    expect(destination.status).toBe(201);
    const refusals = await call('POST', '/api/v1/notifications/policies', {
      apiVersion: 'flotilla.dev/v1alpha1',
      kind: 'NotificationPolicy',
      metadata: { name: 'web-refusals' },
      spec: { triggers: ['policy-refused'], appSets: ['web'], destinations: ['team'], digestWindow: '2s' },
    });
    expect(refusals.status).toBe(201);
    for (const name of ['c1', 'c2']) {
      const created = await call<{ bootstrapToken: string }>('POST', '/api/v1/clusters', { name });
      expect(created.status).toBe(201);
      const registered = await call<{ credential: string }>('POST', '/api/agent/v1/register', {
        clusterName: name,
        bootstrapToken: created.body.bootstrapToken,
      });
      expect(registered.status).toBe(200);
      credentials[name] = registered.body.credential;
    }
    await heartbeat();
  }, 180_000);

  afterAll(async () => {
    await hub?.close();
    await receiver?.close();
    fleetRepo?.remove();
    appRepo?.remove();
  }, 120_000);

  it('stores the policies from the fleet commit, and releases an allowed bundle with its warnings audited', async () => {
    const first = appRepo.head().slice(0, 7);
    for (const name of ['web-c1', 'web-c2'])
      await expect.poll(() => stateOf(name), poll).toMatch(new RegExp(`^${first}/${first} `));
    const created = await audit('admission-policy.created');
    expect(created.map((e) => e.scope).sort()).toEqual([
      'admission-policy:ValidatingAdmissionPolicy/allowed-registry',
      'admission-policy:ValidatingAdmissionPolicy/two-replicas',
      'admission-policy:ValidatingAdmissionPolicyBinding/allowed-registry',
      'admission-policy:ValidatingAdmissionPolicyBinding/two-replicas',
    ]);
    expect(created[0]?.details).toMatchObject({ file: 'fleet/policies.yaml', repoUrl: fleetRepo.url });
    // Warn does not hold: released, and the warning is in the audit log for each target.
    const warned = await audit('policy.warned');
    expect(warned.map((e) => e.scope).sort()).toEqual(['target:web-c1', 'target:web-c2']);
    expect(warned[0]?.details).toMatchObject({
      policy: 'two-replicas',
      object: { kind: 'Deployment', name: 'web', namespace: 'web' },
      message: 'run at least two replicas',
    });
  }, 120_000);

  it('holds every target of a commit whose image comes from a forbidden registry; the previous revision stays', async () => {
    const good = appRepo.head().slice(0, 7);
    const bad = appRepo.commit({ 'app/deploy.yaml': deployment('docker.io/library/nginx:1.27', 2) }, 'nginx');
    for (const name of ['web-c1', 'web-c2'])
      await expect.poll(() => stateOf(name), poll).toBe(`${good}/${bad.slice(0, 7)} PolicyDenied`);
    await heartbeat();
    const t = (await targets())['web-c1'];
    expect(t?.reason).toMatchObject({
      code: 'PolicyDenied',
      policy: 'allowed-registry',
      binding: 'allowed-registry',
      object: { apiVersion: 'apps/v1', kind: 'Deployment', namespace: 'web', name: 'web' },
    });
    expect(t?.reason?.message).toContain(
      'policy allowed-registry (binding allowed-registry) denies Deployment web/web',
    );
    expect(t?.reason?.message).toContain('images must come from registry.example.com');
    // The same reason in `flotilla targets` (the built CLI), the metric, and explain's holds.
    const { stdout } = await promisify(execFile)(process.execPath, [CLI, 'targets'], {
      env: { ...process.env, FLOTILLA_HUB_URL: hub.url, FLOTILLA_CONFIG: '/nonexistent/flotilla.yaml' },
      timeout: 30_000,
    });
    expect(stdout.split('\n').find((r) => r.split(/\s+/).includes('web-c1'))).toContain(
      'PolicyDenied: policy allowed-registry',
    );
    const metrics = await fetch(`${hub.url}/metrics`).then((r) => r.text());
    expect(metrics).toContain('flotilla_targets_by_reason{reason="PolicyDenied"} 2');
    const explained = await call<{ targets: { holds: { kind: string; message: string }[] }[] }>(
      'GET',
      '/api/v1/explain?cluster=c1&appset=web',
    );
    expect(explained.body.targets[0]?.holds).toContainEqual({
      kind: 'admission-policy',
      message: expect.stringContaining(
        'policy allowed-registry (binding allowed-registry) denies Deployment web/web',
      ) as unknown,
    });
    const denied = await audit('policy.denied');
    expect(denied.map((e) => e.scope).sort()).toEqual(['target:web-c1', 'target:web-c2']);
    expect(denied[0]?.details).toMatchObject({ revision: bad, policy: 'allowed-registry', action: 'Deny' });
    // Told once for the appset, naming each target held and why.
    await expect.poll(() => receiver.messages().length, poll).toBe(1);
    const [told] = receiver.messages();
    expect(told).toMatchObject({ event: 'policy-refused', signatureValid: true, accepted: 1 });
    expect(told?.body).toMatchObject({ appSet: 'web', revision: bad, count: 2 });
    const lines = String(told?.body['text']).split('\n').sort();
    expect(lines.map((l) => l.split(':')[0])).toEqual(['web-c1', 'web-c2']);
    expect(lines[0]).toContain(`${bad.slice(0, 12)} denied by admission policy allowed-registry: `);
    expect(lines[0]).toContain('images must come from registry.example.com');
    // The agents are still given the previous bundle, and the policies to check it with again.
    const assigned = await assignmentsOf('c1');
    expect(assigned.map((a) => `${a.name} ${a.revision.slice(0, 7)}`)).toEqual([`web-c1 ${good}`]);
    expect(assigned[0]?.policies?.documents.map((d) => `${d.kind}/${d.metadata.name}`)).toEqual([
      'ValidatingAdmissionPolicy/allowed-registry',
      'ValidatingAdmissionPolicy/two-replicas',
      'ValidatingAdmissionPolicyBinding/allowed-registry',
      'ValidatingAdmissionPolicyBinding/two-replicas',
    ]);
  }, 120_000);

  it('a binding scoped to clusters labelled env=prod holds only those', async () => {
    const bad = appRepo.head().slice(0, 7);
    const good = (await targets())['web-c1']?.releasedRevision?.slice(0, 7);
    fleetRepo.commit({ 'fleet/policies.yaml': policies('env=prod') }, 'registry rule for prod only');
    await expect.poll(() => stateOf('web-c2'), poll).toBe(`${bad}/${bad} -`);
    expect(await stateOf('web-c1')).toBe(`${good}/${bad} PolicyDenied`);
    // c2's assignment carries only what applies to it.
    expect(
      (await assignmentsOf('c2'))[0]?.policies?.documents.map((d) => `${d.kind}/${d.metadata.name}`),
    ).toEqual(['ValidatingAdmissionPolicy/two-replicas', 'ValidatingAdmissionPolicyBinding/two-replicas']);
    expect((await audit('admission-policy.updated')).map((e) => e.scope)).toEqual([
      'admission-policy:ValidatingAdmissionPolicyBinding/allowed-registry',
    ]);
  }, 120_000);

  it('fixing the commit releases it everywhere and clears the reason', async () => {
    const fixed = appRepo
      .commit({ 'app/deploy.yaml': deployment('registry.example.com/web:2', 2) }, 'our registry')
      .slice(0, 7);
    for (const name of ['web-c1', 'web-c2'])
      await expect.poll(() => stateOf(name), poll).toMatch(new RegExp(`^${fixed}/${fixed} (?!PolicyDenied)`));
    // Two replicas now: no new warning for this revision.
    const warned = await audit('policy.warned');
    expect(warned.filter((e) => String(e.details['revision']).startsWith(fixed))).toEqual([]);
  }, 120_000);

  it('a break-glass lets a Deny through only when the policy allows it, audited', async () => {
    const before = (await targets())['web-c1']?.releasedRevision?.slice(0, 7);
    const open = async (reason: string) => {
      const opened = await call<{ id: number }>(
        'POST',
        '/api/v1/break-glass',
        { scope: 'target', name: 'web-c1', reason, durationMinutes: 60, allowSyncOutsideWindows: true },
        { 'x-flotilla-actor': 'alice' },
      );
      expect(opened.status).toBe(201);
      return opened.body.id;
    };
    const first = await open('incident 7');
    const bad = appRepo.commit(
      { 'app/deploy.yaml': deployment('docker.io/library/nginx:1.28', 2) },
      'hotfix',
    );
    const held = `${before}/${bad.slice(0, 7)} PolicyDenied`;
    // The policy does not say so: the break-glass changes nothing.
    await expect.poll(() => stateOf('web-c1'), poll).toBe(held);
    expect(await audit('policy.break-glass-bypass')).toEqual([]);

    // The policy says so, but no break-glass is open: still held.
    const closed = await call(
      'POST',
      `/api/v1/break-glass/${first}/close`,
      { reason: 'over' },
      {
        'x-flotilla-actor': 'alice',
      },
    );
    expect(closed.status).toBeLessThan(300);
    const allowing = fleetRepo.commit(
      { 'fleet/policies.yaml': policies('env=prod', true) },
      'registry rule yields to break-glass',
    );
    await expect
      .poll(
        async () =>
          (await call<{ appliedCommit: string }[]>('GET', '/api/v1/fleet-sources')).body[0]?.appliedCommit,
        poll,
      )
      .toBe(allowing);
    await waitForIdleQueues(hub.app);
    expect(await stateOf('web-c1')).toBe(held);

    // A break-glass opened, and the appset refreshed: let through, and audited.
    const second = await open('incident 8');
    expect(
      (await call('POST', '/api/v1/appsets/web/refresh', {}, { 'x-flotilla-actor': 'alice' })).status,
    ).toBeLessThan(300);
    await expect
      .poll(() => stateOf('web-c1'), poll)
      .toMatch(new RegExp(`^${bad.slice(0, 7)}/${bad.slice(0, 7)} `));
    const bypass = await audit('policy.break-glass-bypass');
    expect(bypass).toHaveLength(1);
    expect(bypass[0]).toMatchObject({
      scope: 'target:web-c1',
      details: {
        policy: 'allowed-registry',
        breakGlass: String(second),
        reason: 'incident 8',
        revision: bad,
      },
    });
  }, 120_000);

  it('refuses a fleet commit whose binding scope does not read, naming the file and the annotation', async () => {
    const applied = fleetRepo.head();
    fleetRepo.commit({ 'fleet/policies.yaml': policies('env in prod') }, 'bad selector');
    await expect
      .poll(async () => {
        const list = await call<{ id: string; status: string }[]>('GET', '/api/v1/fleet-sources');
        return list.body[0]?.status;
      }, poll)
      .toBe('Error');
    const list = await call<{ id: string }[]>('GET', '/api/v1/fleet-sources');
    const source = await call<{
      appliedCommit: string;
      error: { errors: { file: string; path: string; code: string }[] };
    }>('GET', `/api/v1/fleet-sources/${list.body[0]?.id ?? ''}`);
    expect(source.body.appliedCommit).toBe(applied);
    expect(source.body.error.errors[0]).toMatchObject({
      file: 'fleet/policies.yaml',
      code: 'invalid-selector',
      path: 'metadata.annotations["flotilla.dev/cluster-selector"]',
    });
  }, 120_000);

  it('removing the fleet source removes its policies: assignments stop carrying them', async () => {
    const list = await call<{ id: string }[]>('GET', '/api/v1/fleet-sources');
    const id = list.body[0]?.id ?? '';
    expect((await assignmentsOf('c1'))[0]?.policies).toBeDefined();
    const removed = await call('DELETE', `/api/v1/fleet-sources/${id}`, undefined, {
      'x-flotilla-actor': 'alice',
    });
    expect(removed.status).toBeLessThan(300);
    await expect.poll(async () => (await assignmentsOf('c1'))[0]?.policies, poll).toBeUndefined();
    const deleted = await audit('fleet-source.deleted');
    expect(deleted[0]?.details).toMatchObject({ admissionPoliciesRemoved: 4 });
  }, 120_000);
});
