import 'reflect-metadata';
import { execFileSync } from 'node:child_process';
import { planReportSchema, type PlanReport } from '@flotilla/plan';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createTestGitRepo,
  hubCaller,
  startTestHub,
  waitForIdleQueues,
  type TestGitRepo,
  type TestHub,
} from '../testing/index.js';

// POST /api/v1/plan on the real hub (PostgreSQL, Redis, a Git repository by file URL): the plan of a
// branch of the fleet repository over main, with the hub's live cluster labels; bad input refused,
// naming the field, and nothing changed.

const deployment = (image: string) => `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: 1
  selector:
    matchLabels:
      app: web
  template:
    metadata:
      labels:
        app: web
    spec:
      containers:
        - name: web
          image: ${image}
`;

/** Every frontend cluster, staging first then prod; the manifests live in the fleet repository itself. */
const appSet = (repoUrl: string) => `apiVersion: flotilla.dev/v1alpha1
kind: ApplicationSet
metadata:
  name: web
spec:
  generators:
    - clusters:
        selector:
          matchLabels:
            tier: frontend
  rollout:
    steps:
      - name: canary
        selector:
          matchLabels:
            env: staging
      - name: production
        selector:
          matchLabels:
            env: prod
  template:
    metadata:
      name: 'web-{{name}}'
    spec:
      source:
        repoURL: ${repoUrl}
        targetRevision: main
        path: apps/web
      destination:
        name: '{{name}}'
        namespace: web
`;

const GROUP = `apiVersion: flotilla.dev/v1alpha1
kind: ClusterGroup
metadata:
  name: prod
spec:
  clusters: [eu-2]
  labels:
    env: prod
`;

let hub: TestHub;
let fleetRepo: TestGitRepo;
let base: string;
let head: string;
const call = hubCaller(() => hub);

function git(...args: string[]): string {
  return execFileSync('git', ['-C', fleetRepo.dir, ...args], { encoding: 'utf8' }).trim();
}

describe('POST /api/v1/plan', () => {
  beforeAll(async () => {
    fleetRepo = createTestGitRepo({ 'apps/web/deployment.yaml': deployment('web:1.0') });
    base = fleetRepo.commit({ 'fleet/web.yaml': appSet(fleetRepo.url) }, 'web');
    // The change under review: an image bump on a branch main does not have yet.
    git('checkout', '-q', '-b', 'bump');
    head = fleetRepo.commit({ 'apps/web/deployment.yaml': deployment('web:1.1') }, 'bump web');
    // The bump with a ClusterGroup that labels eu-2 as prod; a fleet file the hub would refuse; an
    // application repository the hub never fetched.
    git('checkout', '-q', '-b', 'regroup');
    fleetRepo.commit({ 'fleet/groups.yaml': GROUP }, 'eu-2 is prod');
    git('checkout', '-q', '-b', 'broken', 'main');
    fleetRepo.commit(
      { 'fleet/web.yaml': 'apiVersion: flotilla.dev/v1alpha1\nkind: ApplicationSet\n' },
      'broken',
    );
    git('checkout', '-q', '-b', 'foreign', 'main');
    fleetRepo.commit({ 'fleet/web.yaml': appSet('file:///nowhere/app.git') }, 'another repository');
    git('checkout', '-q', 'main');

    hub = await startTestHub({ FLEET_REPOSITORIES: `${fleetRepo.url}#main:fleet` });
    // Labels set through the API: the plan sees them, an offline plan would need them in a file.
    const clusters = {
      'eu-1': { tier: 'frontend', env: 'prod' },
      'eu-2': { tier: 'frontend', env: 'staging' },
      'db-1': { tier: 'backend', env: 'prod' },
    };
    for (const [name, labels] of Object.entries(clusters))
      expect((await call('POST', '/api/v1/clusters', { name, labels })).status).toBe(201);
  }, 180_000);

  afterAll(async () => {
    await hub?.close();
    fleetRepo?.remove();
  }, 120_000);

  it('starts from the fleet applied at main: one target per frontend cluster', async () => {
    await expect
      .poll(
        async () =>
          (await call<{ name: string }[]>('GET', '/api/v1/targets?appSet=web')).body.map((t) => t.name),
        { timeout: 60_000, interval: 250 },
      )
      .toEqual(['web-eu-1', 'web-eu-2']);
  }, 90_000);

  it('shows an image bump per target, in the rollout step the live labels put each cluster in', async () => {
    const before = await hubState();
    const plan = await call<PlanReport>('POST', '/api/v1/plan', { base: 'main', head: 'bump' });
    expect(plan.status).toBe(200);
    const report = planReportSchema.parse(plan.body);
    expect(report.base.revision).toBe(base);
    expect(report.head.revision).toBe(head);
    expect(report.changed).toBe(true);
    expect(report.summary.targets).toEqual({ added: 0, removed: 0, changed: 2, unchanged: 0 });
    expect(report.fleet.objects).toEqual([]);
    const [web] = report.appSets;
    expect(web?.name).toBe('web');
    expect(web?.rollout).toEqual({ strategy: null, steps: ['canary', 'production'] });
    expect(web?.targets.map((t) => [t.name, t.cluster, t.change, t.step?.name])).toEqual([
      ['web-eu-1', 'eu-1', 'changed', 'production'],
      ['web-eu-2', 'eu-2', 'changed', 'canary'],
    ]);
    const [object] = web?.targets[0]?.objects ?? [];
    expect(object).toMatchObject({ kind: 'Deployment', name: 'web', namespace: null, change: 'changed' });
    expect(object?.diff).toContain('-        - image: web:1.0');
    expect(object?.diff).toContain('+        - image: web:1.1');
    // The base's targets are the ones the hub runs now: the same bundle digests.
    const live = await call<{ name: string; bundleDigest: string }[]>('GET', '/api/v1/targets?appSet=web');
    expect(web?.targets.map((t) => t.digest.base)).toEqual(live.body.map((t) => t.bundleDigest));
    expect(await hubState()).toEqual(before);
  }, 60_000);

  it('follows the live inventory: a cluster registered since is planned too, in its step', async () => {
    const labels = { tier: 'frontend', env: 'staging' };
    expect((await call('POST', '/api/v1/clusters', { name: 'eu-3', labels })).status).toBe(201);
    const plan = await call<PlanReport>('POST', '/api/v1/plan', { base, head: head.slice(0, 12) });
    expect(plan.status).toBe(200);
    expect(plan.body.appSets[0]?.targets.map((t) => `${t.name} ${t.change} ${t.step?.name ?? '-'}`)).toEqual([
      'web-eu-1 changed production',
      'web-eu-2 changed canary',
      'web-eu-3 changed canary',
    ]);
    // The hub expands the appset for the new cluster meanwhile; later tests start from that.
    await expect
      .poll(async () => (await call<unknown[]>('GET', '/api/v1/targets?appSet=web')).body.length, {
        timeout: 60_000,
      })
      .toBe(3);
  }, 60_000);

  it("moves clusters by the head's ClusterGroups, as applying the commit would", async () => {
    const plan = await call<PlanReport>('POST', '/api/v1/plan', { base: 'main', head: 'regroup' });
    expect(plan.status).toBe(200);
    expect(plan.body.fleet.objects.map((o) => `${o.change} ${o.kind}/${o.name} ${o.file}`)).toEqual([
      'added ClusterGroup/prod groups.yaml',
    ]);
    expect(plan.body.appSets[0]?.targets.map((t) => `${t.name} ${t.step?.name ?? '-'}`)).toEqual([
      'web-eu-1 production',
      'web-eu-2 production',
      'web-eu-3 canary',
    ]);
  }, 60_000);

  it('refuses a bad or unknown revision, or a side it cannot build, naming the field; changes nothing', async () => {
    const before = await hubState();
    const cases: [unknown, number, string, string][] = [
      [{ base: 'main', head: 'no-such-branch' }, 404, 'unknown-revision', 'head'],
      [{ base: 'nope', head: 'bump' }, 404, 'unknown-revision', 'base'],
      [{ head: 'bump' }, 400, 'invalid-request', 'base'],
      [{ base: '--upload-pack=evil', head: 'bump' }, 400, 'invalid-request', 'base'],
      [{ base: 'main', head: 'bump', at: 'tomorrow' }, 400, 'invalid-request', 'at'],
      [{ base: 'main', head: 'bump', extra: 1 }, 400, 'invalid-request', ''],
      [{ fleetSource: 'unknown', base: 'main', head: 'bump' }, 404, 'not-found', 'fleetSource'],
      [{ base: 'main', head: 'broken' }, 422, 'invalid-fleet', 'head'],
      [{ base: 'foreign', head: 'main' }, 422, 'repository-not-fetched', 'base'],
    ];
    for (const [body, status, code, path] of cases) {
      const r = await call<{ code: string; path?: string; message: string }>('POST', '/api/v1/plan', body);
      expect({ body, status: r.status, code: r.body.code }).toEqual({ body, status, code });
      if (path !== '') expect(r.body.path).toBe(path);
      expect(r.body.message.length).toBeGreaterThan(10);
    }
    expect(await hubState()).toEqual(before);
  }, 60_000);

  it('holds targets by the windows made through the API too, not only those in the fleet repository', async () => {
    const window = await call('POST', '/api/v1/windows', {
      name: 'freeze-eu-1',
      kind: 'deny',
      schedule: '* * * * *',
      duration: '1h',
      clusters: ['eu-1'],
      reason: 'INC-12 stabilising',
    });
    expect(window.status).toBe(201);
    try {
      const plan = await call<PlanReport>('POST', '/api/v1/plan', { base: 'main', head: 'bump' });
      expect(plan.status).toBe(200);
      const held = plan.body.appSets[0]?.targets.map((t) => [t.name, t.windows.canSync, t.windows.matching]);
      expect(held).toEqual([
        ['web-eu-1', false, ['freeze-eu-1']],
        ['web-eu-2', true, []],
        ['web-eu-3', true, []],
      ]);
      // Every minute for an hour: always in force, so no time it would open is named.
      expect(plan.body.appSets[0]?.targets[0]?.windows).toMatchObject({
        active: ['freeze-eu-1'],
        heldUntil: null,
      });
      expect(plan.body.summary.heldByWindows).toBe(1);
    } finally {
      expect((await call('DELETE', '/api/v1/windows/freeze-eu-1?reason=lifted')).status).toBeLessThan(300);
    }
    const after = await call<PlanReport>('POST', '/api/v1/plan', { base: 'main', head: 'bump' });
    expect(after.body.appSets[0]?.targets.every((t) => t.windows.canSync)).toBe(true);
  }, 60_000);

  it('names the fleet source by id or repository URL', async () => {
    const sources = await call<{ id: string }[]>('GET', '/api/v1/fleet-sources');
    const id = sources.body[0]?.id ?? '';
    for (const fleetSource of [id, fleetRepo.url]) {
      const r = await call<PlanReport>('POST', '/api/v1/plan', { fleetSource, base: 'main', head: 'main' });
      expect(r.status).toBe(200);
      expect(r.body.changed).toBe(false);
      expect(r.body.summary.targets.unchanged).toBe(3);
    }
  }, 60_000);
});

/** What a plan must not change: targets, the fleet source, the audit trail. */
async function hubState(): Promise<unknown> {
  await waitForIdleQueues(hub.app);
  const targets = await call<unknown[]>('GET', '/api/v1/targets?appSet=web');
  const sources = await call<unknown[]>('GET', '/api/v1/fleet-sources');
  const audit = await call<{ items: unknown[] }>('GET', '/api/v1/audit?limit=500');
  return { targets: targets.body, sources: sources.body, audit: audit.body.items.length };
}
