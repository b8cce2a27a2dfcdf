import 'reflect-metadata';
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import type { AssignmentsResponse, Bundle, RegisterResponse, Report, TargetReason } from '@flotilla/contract';
import { Database } from './db/database.js';
import {
  createTestGitRepo,
  startTestHub,
  waitForIdleQueues,
  type TestGitRepo,
  type TestHub,
} from './testing/index.js';

// Boots the real hub once on real PostgreSQL and Redis, with a real Git repository, and talks HTTP.

const fixture = (name: string) => readFileSync(new URL(`./testdata/${name}`, import.meta.url), 'utf8');

function appSetDoc(file: string, vars: Record<string, string>): unknown {
  let text = fixture(file);
  for (const [k, v] of Object.entries(vars)) text = text.replaceAll(k, v);
  return parse(text);
}

interface Answer<T = unknown> {
  status: number;
  body: T;
  headers: Headers;
}

let hub: TestHub;
let repo: TestGitRepo;

async function call<T = Record<string, unknown>>(
  method: string,
  path: string,
  opts: { body?: unknown; token?: string; headers?: Record<string, string> } = {},
): Promise<Answer<T>> {
  const headers: Record<string, string> = { ...opts.headers };
  if (opts.body !== undefined) headers['content-type'] = 'application/json';
  if (opts.token) headers['authorization'] = `Bearer ${opts.token}`;
  const res = await fetch(`${hub.url}${path}`, {
    method,
    headers,
    ...(opts.body !== undefined && { body: JSON.stringify(opts.body) }),
  });
  const text = await res.text();
  return { status: res.status, body: (text ? JSON.parse(text) : null) as T, headers: res.headers };
}

async function addCluster(name: string): Promise<{ token: string; expiresAt: string }> {
  const r = await call<{ bootstrapToken: string; expiresAt: string }>('POST', '/api/v1/clusters', {
    body: { name, labels: { region: name } },
  });
  expect(r.status).toBe(201);
  return { token: r.body.bootstrapToken, expiresAt: r.body.expiresAt };
}

async function register(clusterName: string, bootstrapToken: string) {
  return call<RegisterResponse & { code?: string; message?: string; path?: string }>(
    'POST',
    '/api/agent/v1/register',
    { body: { clusterName, bootstrapToken, agentVersion: 'test' } },
  );
}

interface TargetView {
  id: string;
  name: string;
  cluster: string;
  appSet: string;
  namespace: string;
  desiredRevision: string;
  bundleDigest: string | null;
  syncStatus: string;
  health: string;
  lastSyncedAt: string | null;
  reason: TargetReason | null;
}

async function targets(appSet = 'web'): Promise<TargetView[]> {
  return (await call<TargetView[]>('GET', `/api/v1/targets?appSet=${appSet}`)).body;
}

async function appSet(name: string) {
  return call<{
    status: string;
    error: { code: string; message: string; path?: string } | null;
    targetCount: number;
  }>('GET', `/api/v1/appsets/${name}`);
}

async function refreshRepository(): Promise<void> {
  const repos = await call<{ id: string; url: string }[]>('GET', '/api/v1/repositories');
  const mine = repos.body.find((r) => r.url === repo.url);
  expect(mine).toBeDefined();
  const r = await call('POST', `/api/v1/repositories/${mine?.id}/refresh`);
  expect(r.status).toBe(202);
}

const credentials: Record<string, string> = {};

describe('hub on PostgreSQL, Redis and Git', () => {
  beforeAll(async () => {
    repo = createTestGitRepo({
      'apps/eu1/config.yaml': fixture('configmap-eu1.yaml'),
      'apps/us1/all.yaml': fixture('configmap-us1.yaml'),
      'docs/README.md': '# not manifests\n',
    });
    hub = await startTestHub();
  }, 180_000);

  afterAll(async () => {
    await hub?.close();
    repo?.remove();
  }, 60_000);

  it('serves health, readiness, metrics and the OpenAPI document', async () => {
    expect((await call('GET', '/healthz')).body).toEqual({ status: 'ok' });
    const ready = await call<{ status: string; checks: Record<string, string> }>('GET', '/readyz');
    expect(ready.status).toBe(200);
    // The test hub runs in development mode, and readiness says so with every safety it lacks.
    expect(ready.body).toEqual({
      status: 'ready',
      checks: { database: 'ok', redis: 'ok' },
      mode: 'development',
      warnings: [
        'DEVELOPMENT MODE (FLOTILLA_DEV_MODE=1): not for production',
        'no FLOTILLA_ADMIN_TOKEN or OIDC: the API is open, anyone who reaches the hub is admin',
        'no FLOTILLA_SECRETS_KEY: repository credentials cannot be stored',
      ],
    });
    const docs = await call<{ paths: Record<string, unknown> }>('GET', '/api/docs-json');
    expect(Object.keys(docs.body.paths)).toEqual(
      expect.arrayContaining(['/api/v1/clusters', '/api/v1/appsets', '/api/agent/v1/assignments']),
    );
    const metrics = await fetch(`${hub.url}/metrics`).then((r) => r.text());
    expect(metrics).toContain('flotilla_agents_connected');
    expect(metrics).toContain('flotilla_http_requests_total');
    expect(metrics).toMatch(/flotilla_queue_jobs\{queue="source-sync",state="waiting"\} \d+/);
  });

  it('refuses a malformed cluster with the offending field named, and stores nothing', async () => {
    const r = await call<{ code: string; path: string }>('POST', '/api/v1/clusters', {
      body: { name: 'Bad_Name', labels: { env: 3 } },
    });
    expect(r.status).toBe(400);
    expect(r.body.code).toBe('invalid-request');
    expect(r.body.path).toBe('name');
    expect((await call<unknown[]>('GET', '/api/v1/clusters')).body).toEqual([]);
  });

  it('registers an agent with a good bootstrap token and refuses wrong, reused and expired ones', async () => {
    const eu1 = await addCluster('eu1');
    const us1 = await addCluster('us1');

    const wrong = await register('eu1', 'flb_not-a-token');
    expect(wrong.status).toBe(401);
    expect(wrong.body.code).toBe('bootstrap-token-invalid');

    const otherCluster = await register('eu1', us1.token);
    expect(otherCluster.status).toBe(401);
    expect(otherCluster.body.code).toBe('bootstrap-token-invalid');
    expect(otherCluster.body.message).toContain('another cluster');

    const good = await register('eu1', eu1.token);
    expect(good.status).toBe(200);
    expect(good.body.clusterName).toBe('eu1');
    expect(good.body.credential).toMatch(/^fla_/);
    expect(good.body.expiresAt).toBeNull();
    credentials['eu1'] = good.body.credential;

    const reused = await register('eu1', eu1.token);
    expect(reused.status).toBe(401);
    expect(reused.body.code).toBe('bootstrap-token-used');
    // The refused attempt did not replace the credential.
    expect(
      (await call('GET', '/api/agent/v1/assignments?wait=0', { token: credentials['eu1'] })).status,
    ).toBe(200);

    const fresh = await call<{ bootstrapToken: string }>('POST', '/api/v1/clusters/eu1/bootstrap-tokens');
    await hub.app.get(Database).prisma.bootstrapToken.updateMany({
      where: { usedAt: null, cluster: { name: 'eu1' } },
      data: { expiresAt: new Date(0) },
    });
    const expired = await register('eu1', fresh.body.bootstrapToken);
    expect(expired.status).toBe(401);
    expect(expired.body.code).toBe('bootstrap-token-expired');
    expect(
      (await call('GET', '/api/agent/v1/assignments?wait=0', { token: credentials['eu1'] })).status,
    ).toBe(200);

    const us1Registered = await register('us1', us1.token);
    expect(us1Registered.status).toBe(200);
    credentials['us1'] = us1Registered.body.credential;

    expect((await call('GET', '/api/agent/v1/assignments', { token: 'fla_nope' })).status).toBe(401);
    const cluster = await call<{ registered: boolean; agentVersion: string; lastSeenAt: string | null }>(
      'GET',
      '/api/v1/clusters/eu1',
    );
    expect(cluster.body.registered).toBe(true);
    expect(cluster.body.agentVersion).toBe('test');
    expect(cluster.body.lastSeenAt).not.toBeNull();
  });

  it('refuses an appset with an unknown generator before storing it', async () => {
    const r = await call<{ code: string; path: string; message: string }>('POST', '/api/v1/appsets', {
      body: appSetDoc('appset-argo-unknown-generator.yaml', { REPO_URL: repo.url }),
    });
    expect(r.status).toBe(400);
    expect(r.body.code).toBe('unknown-generator');
    expect(r.body.path).toBe('spec.generators[0]');
    expect(r.body.message).toContain('pullRequest');
    expect((await appSet('pr-previews')).status).toBe(404);
  });

  it('expands an appset into one target per cluster, each pointing at its own bundle', async () => {
    const created = await call('POST', '/api/v1/appsets', {
      body: appSetDoc('appset-web.yaml', { REPO_URL: repo.url }),
    });
    expect(created.status).toBe(201);
    await expect
      .poll(async () => (await targets()).filter((t) => t.bundleDigest).length, { timeout: 30_000 })
      .toBe(2);
    const [eu1, us1] = await targets();
    expect(eu1).toMatchObject({
      name: 'web-eu1',
      cluster: 'eu1',
      appSet: 'web',
      namespace: 'web',
      syncStatus: 'Unknown',
    });
    expect(us1).toMatchObject({
      name: 'web-us1',
      cluster: 'us1',
      appSet: 'web',
      namespace: 'web',
      syncStatus: 'Unknown',
    });
    expect(eu1?.desiredRevision).toBe(repo.head());
    expect(eu1?.bundleDigest).toMatch(/^sha256:[0-9a-f]{64}$/);
    expect(eu1?.bundleDigest).not.toBe(us1?.bundleDigest);
    expect((await appSet('web')).body).toMatchObject({ status: 'Ready', error: null, targetCount: 2 });

    const a = await call<AssignmentsResponse>('GET', '/api/agent/v1/assignments?wait=0', {
      token: credentials['eu1'],
    });
    expect(a.status).toBe(200);
    expect(a.headers.get('etag')).toBe(a.body.etag);
    expect(a.body.assignments.map((x) => x.name)).toEqual(['web-eu1']);
    expect(a.body.assignments[0]).toMatchObject({
      appSet: 'web',
      namespace: 'web',
      revision: repo.head(),
      bundleDigest: eu1?.bundleDigest,
      syncPolicy: { automated: true, selfHeal: true, prune: true, allowEmpty: false },
    });

    const bundle = await call<Bundle>('GET', `/api/agent/v1/bundles/${eu1?.bundleDigest}`, {
      token: credentials['eu1'],
    });
    expect(bundle.status).toBe(200);
    expect(bundle.body.source).toEqual({ repoUrl: repo.url, revision: repo.head(), path: 'apps/eu1' });
    expect(bundle.body.manifests).toEqual([
      { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'web-config' }, data: { region: 'eu1' } },
    ]);
  }, 60_000);

  it("does not let an agent read another cluster's bundle", async () => {
    const us1Digest = (await targets()).find((t) => t.cluster === 'us1')?.bundleDigest;
    const r = await call<{ code: string }>('GET', `/api/agent/v1/bundles/${us1Digest}`, {
      token: credentials['eu1'],
    });
    expect(r.status).toBe(404);
    expect(r.body.code).toBe('not-found');
    const own = await call('GET', `/api/agent/v1/bundles/${us1Digest}`, { token: credentials['us1'] });
    expect(own.status).toBe(200);
  });

  it('holds a long-poll until the wait is over (304), and answers at once when the desired set changes', async () => {
    const first = await call<AssignmentsResponse>('GET', '/api/agent/v1/assignments?wait=0', {
      token: credentials['eu1'],
    });
    const etag = first.body.etag;
    const unchanged = await call('GET', '/api/agent/v1/assignments?wait=1', {
      token: credentials['eu1'],
      headers: { 'if-none-match': etag },
    });
    expect(unchanged.status).toBe(304);
    expect(unchanged.headers.get('etag')).toBe(etag);

    const waiting = call<AssignmentsResponse>('GET', '/api/agent/v1/assignments?wait=60', {
      token: credentials['eu1'],
      headers: { 'if-none-match': etag },
    });
    const sha = repo.commit({
      'apps/eu1/config.yaml': fixture('configmap-eu1.yaml').replace('region: eu1', 'region: eu1-b'),
    });
    await refreshRepository();
    const woken = await waiting;
    expect(woken.status).toBe(200);
    expect(woken.body.etag).not.toBe(etag);
    expect(woken.body.assignments[0]?.revision).toBe(sha);
  }, 90_000);

  it('ingests sync and health reports, and counts a replayed batch as duplicates', async () => {
    const a = await call<AssignmentsResponse>('GET', '/api/agent/v1/assignments?wait=0', {
      token: credentials['eu1'],
    });
    const assignment = a.body.assignments[0];
    expect(assignment).toBeDefined();
    if (!assignment) return;
    const at = new Date().toISOString();
    const reports: Report[] = [
      {
        id: `sync-${assignment.revision}`,
        type: 'sync',
        targetId: assignment.targetId,
        at,
        revision: assignment.revision,
        bundleDigest: assignment.bundleDigest,
        trigger: 'auto',
        outcome: 'Succeeded',
        startedAt: at,
        finishedAt: at,
        message: 'applied 1 object',
        resources: [
          {
            group: '',
            kind: 'ConfigMap',
            namespace: 'web',
            name: 'web-config',
            action: 'applied',
            message: '',
          },
        ],
      },
      {
        id: `health-${assignment.revision}`,
        type: 'health',
        targetId: assignment.targetId,
        at,
        status: 'Healthy',
        message: '',
        resources: [],
      },
    ];
    const first = await call('POST', '/api/agent/v1/reports', {
      token: credentials['eu1'],
      body: { reports },
    });
    expect(first.status).toBe(200);
    expect(first.body).toEqual({ accepted: 2, duplicates: 0 });
    const replay = await call('POST', '/api/agent/v1/reports', {
      token: credentials['eu1'],
      body: { reports },
    });
    expect(replay.body).toEqual({ accepted: 0, duplicates: 2 });

    const eu1 = (await targets()).find((t) => t.name === 'web-eu1');
    expect(eu1).toMatchObject({ syncStatus: 'Synced', health: 'Healthy', lastSyncedAt: at });
    const runs = await call<{
      items: { target: string; outcome: string; revision: string; reportId: string }[];
      nextCursor: string | null;
    }>('GET', '/api/v1/sync-runs?target=web-eu1');
    expect(runs.body.items).toHaveLength(1);
    expect(runs.body.items[0]).toMatchObject({
      target: 'web-eu1',
      outcome: 'Succeeded',
      revision: assignment.revision,
    });
    expect(runs.body.nextCursor).toBeNull();
    const audit = await call<{ items: { action: string; scope: string }[] }>(
      'GET',
      '/api/v1/audit?scope=target:web-eu1',
    );
    expect(audit.body.items.map((i) => i.action)).toEqual(['health.changed', 'sync.succeeded']);
  });

  it('keeps every target when a commit brings invalid YAML, and names the file and line on the appset', async () => {
    await waitForIdleQueues(hub.app);
    const before = await targets();
    repo.commit({
      'apps/eu1/broken.yaml': 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n   bad: indent\n',
    });
    await refreshRepository();
    await expect.poll(async () => (await appSet('web')).body.status, { timeout: 30_000 }).toBe('Error');
    const error = (await appSet('web')).body.error;
    expect(error?.code).toBe('manifest-invalid-yaml');
    expect(error?.message).toMatch(/^apps\/eu1\/broken\.yaml:\d+: /);
    // Targets keep what they run; each one now says why it does not move on.
    const after = await targets();
    const withoutReason = (ts: TargetView[]) => ts.map((t) => ({ ...t, reason: undefined }));
    expect(withoutReason(after)).toEqual(withoutReason(before));
    for (const t of after) {
      expect(t.reason?.code).toBe('GeneratorError');
      expect(t.reason?.message).toContain('apps/eu1/broken.yaml:');
    }

    repo.commit({ 'apps/eu1/broken.yaml': null });
    await refreshRepository();
    await expect.poll(async () => (await appSet('web')).body.status, { timeout: 30_000 }).toBe('Ready');
  }, 90_000);

  it('records an unreachable repository or a path with no manifests on the appset, and makes no targets', async () => {
    const cases = [
      {
        name: 'ghost',
        url: 'file:///nonexistent/flotilla/repo',
        path: 'apps/eu1',
        code: 'repository-unreachable',
      },
      { name: 'docs', url: repo.url, path: 'docs', code: 'no-manifests' },
      { name: 'nowhere', url: repo.url, path: 'apps/none', code: 'path-not-found' },
    ];
    for (const c of cases) {
      const r = await call('POST', '/api/v1/appsets', {
        body: appSetDoc('appset-single-path.yaml', { NAME: c.name, REPO_URL: c.url, PATH: c.path }),
      });
      expect(r.status).toBe(201);
    }
    // A target for a cluster the inventory does not have is an error, not a silent drop.
    const mars = appSetDoc('appset-single-path.yaml', {
      NAME: 'mars',
      REPO_URL: repo.url,
      PATH: 'apps/eu1',
    }) as {
      spec: { generators: { list: { elements: unknown[] } }[] };
    };
    const list = mars.spec.generators[0]?.list;
    if (list) list.elements = [{ cluster: 'eu1' }, { cluster: 'mars' }];
    expect((await call('POST', '/api/v1/appsets', { body: mars })).status).toBe(201);
    cases.push({ name: 'mars', url: repo.url, path: 'apps/eu1', code: 'unknown-cluster' });
    for (const c of cases) {
      await expect
        .poll(async () => (await appSet(c.name)).body.error?.code ?? null, { timeout: 30_000 })
        .toBe(c.code);
      expect((await appSet(c.name)).body).toMatchObject({ status: 'Error', targetCount: 0 });
      expect(await targets(c.name)).toEqual([]);
    }
    const repos = await call<{ url: string; status: string; error: string | null }[]>(
      'GET',
      '/api/v1/repositories',
    );
    const ghost = repos.body.find((r) => r.url === 'file:///nonexistent/flotilla/repo');
    expect(ghost?.status).toBe('Error');
    expect(ghost?.error).toContain('cannot fetch');
  }, 120_000);

  it('removes the targets of a deleted appset and wakes the agents', async () => {
    const r = await call('DELETE', '/api/v1/appsets/web');
    expect(r.status).toBe(204);
    expect(await targets()).toEqual([]);
    const a = await call<AssignmentsResponse>('GET', '/api/agent/v1/assignments?wait=0', {
      token: credentials['eu1'],
    });
    expect(a.body.assignments).toEqual([]);
    const audit = await call<{ items: { action: string }[] }>('GET', '/api/v1/audit?scope=appset:web');
    expect(audit.body.items[0]?.action).toBe('appset.deleted');
  });
});
