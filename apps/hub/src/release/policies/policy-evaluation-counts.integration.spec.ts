import 'reflect-metadata';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createTestGitRepo,
  hubCaller,
  startTestHub,
  waitForIdleQueues,
  type TestGitRepo,
  type TestHub,
} from '../../testing/index.js';

// The release gate's work, counted by the hub's own metrics on the real hub (PostgreSQL, Redis,
// Git): one app shared by 20 clusters is evaluated once, not 20 times; agents reading their
// assignments and repeated expansions compile nothing more; a new fleet revision of the policies
// compiles once.

const CLUSTERS = Array.from({ length: 20 }, (_, i) => `c${String(i + 1).padStart(2, '0')}`);
const poll = { timeout: 90_000, interval: 250 };

const deployment = (tag: string) => `apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: web, image: "registry.example.com/web:${tag}"}]
`;

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

/** Ten policies on Deployments, each with its binding; `limit` changes one of them (a new fleet revision). */
const policies = (limit: number) =>
  Array.from(
    { length: 10 },
    (_, i) => `apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: rule-${i}}
spec:
  matchConstraints:
    resourceRules: [{apiGroups: [apps], apiVersions: [v1], operations: [CREATE, UPDATE], resources: [deployments]}]
  validations:
    - expression: "object.spec.replicas <= ${i === 0 ? limit : 10 + i}"
      message: too many replicas
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: rule-${i}}
spec: {policyName: rule-${i}, validationActions: [Deny]}
`,
  ).join('---\n');

describe('the release gate compiles once per fleet revision and evaluates once per distinct bundle', () => {
  let hub: TestHub;
  let fleetRepo: TestGitRepo;
  let appRepo: TestGitRepo;
  const call = hubCaller(() => hub);
  let credential = '';

  const counters = async () => {
    const text = await fetch(`${hub.url}/metrics`).then((r) => r.text());
    const value = (name: string) => Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(text)?.[1] ?? NaN);
    return {
      compilations: value('flotilla_policy_set_compilations_total'),
      evaluations: value('flotilla_policy_evaluations_total'),
    };
  };
  /** How many of the 20 targets have `sha` released. */
  const releasedAt = async (sha: string) => {
    const list = await call<{ releasedRevision: string | null }[]>('GET', '/api/v1/targets?appSet=web');
    return list.body.filter((t) => t.releasedRevision === sha).length;
  };
  const readAssignments = async () => {
    const answer = await call<{ assignments: { policies?: { documents: unknown[] } }[] }>(
      'GET',
      '/api/agent/v1/assignments?wait=0',
      undefined,
      { authorization: `Bearer ${credential}` },
    );
    expect(answer.status).toBe(200);
    return answer.body.assignments;
  };
  const fleetApplied = async (sha: string) =>
    expect
      .poll(
        async () =>
          (await call<{ appliedCommit: string }[]>('GET', '/api/v1/fleet-sources')).body[0]?.appliedCommit,
        poll,
      )
      .toBe(sha);

  beforeAll(async () => {
    appRepo = createTestGitRepo({ 'app/deploy.yaml': deployment('1') });
    fleetRepo = createTestGitRepo({
      'fleet/web.yaml': APPSET(appRepo.url),
      'fleet/policies.yaml': policies(5),
    });
    hub = await startTestHub({
      FLEET_REPOSITORIES: `${fleetRepo.url}#main:fleet`,
      CLUSTER_OFFLINE_SECONDS: '3600',
    });
    for (const name of CLUSTERS) {
      const created = await call<{ bootstrapToken: string }>('POST', '/api/v1/clusters', { name });
      expect(created.status).toBe(201);
      if (name !== 'c01') continue;
      const registered = await call<{ credential: string }>('POST', '/api/agent/v1/register', {
        clusterName: name,
        bootstrapToken: created.body.bootstrapToken,
      });
      expect(registered.status).toBe(200);
      credential = registered.body.credential;
    }
  }, 180_000);

  afterAll(async () => {
    await hub?.close();
    fleetRepo?.remove();
    appRepo?.remove();
  }, 120_000);

  it('a commit of the one app shared by 20 clusters is evaluated once and compiles nothing', async () => {
    await expect.poll(() => releasedAt(appRepo.head()), poll).toBe(CLUSTERS.length);
    await waitForIdleQueues(hub.app);
    const before = await counters();
    const next = appRepo.commit({ 'app/deploy.yaml': deployment('2') }, 'web 2');
    await expect.poll(() => releasedAt(next), poll).toBe(CLUSTERS.length);
    // The appset expanded again (a refresh) judges nothing new either.
    expect((await call('POST', '/api/v1/appsets/web/refresh', {})).status).toBeLessThan(300);
    await waitForIdleQueues(hub.app);
    for (let i = 0; i < 5; i++) expect((await readAssignments())[0]?.policies?.documents).toHaveLength(20);
    expect(await counters()).toEqual({
      compilations: before.compilations,
      evaluations: before.evaluations + 1,
    });
  }, 120_000);

  it('a new fleet revision of the policies compiles once, and its next bundle is evaluated once', async () => {
    const before = await counters();
    await fleetApplied(fleetRepo.commit({ 'fleet/policies.yaml': policies(4) }, 'rule-0: at most 4'));
    await waitForIdleQueues(hub.app);
    for (let i = 0; i < 5; i++) await readAssignments();
    const next = appRepo.commit({ 'app/deploy.yaml': deployment('3') }, 'web 3');
    await expect.poll(() => releasedAt(next), poll).toBe(CLUSTERS.length);
    await waitForIdleQueues(hub.app);
    expect(await counters()).toEqual({
      compilations: before.compilations + 1,
      evaluations: before.evaluations + 1,
    });
  }, 120_000);
});
