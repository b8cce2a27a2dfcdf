import 'reflect-metadata';
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { AgentGatewayService } from '../agent-gateway/agent-gateway.service.js';
import {
  createTestGitRepo,
  startTestHub,
  type TestGitRepo,
  type TestHub,
  hubCaller,
} from '../testing/index.js';

// Projects on the real hub (PostgreSQL, Redis, Git): the API validates them, an appset reaching
// outside its project is refused at submission or goes to Error on expansion with its targets
// untouched, and each cluster's assignments carry the project narrowed to that cluster.

const fixture = (name: string) => readFileSync(new URL(`./testdata/${name}`, import.meta.url), 'utf8');

let hub: TestHub;
let repo: TestGitRepo;
let other: TestGitRepo;

const call = hubCaller(() => hub);

interface AppSetView {
  status: string;
  project: string;
  error: { code: string; message: string; path?: string } | null;
  targetCount: number;
}
interface ErrorBody {
  code: string;
  message: string;
  path?: string;
}

function project(mutate: (spec: Record<string, unknown>) => void = () => undefined) {
  const doc = parse(fixture('project-team-a.yaml').replaceAll('REPO_URL', repo.url)) as {
    spec: Record<string, unknown>;
  };
  mutate(doc.spec);
  return doc;
}

function appSet(opts: { namespace?: string; path?: string; repoUrl?: string } = {}) {
  return parse(
    fixture('appset-team-a.yaml')
      .replaceAll('REPO_URL', opts.repoUrl ?? repo.url)
      .replace('PATH', opts.path ?? 'app')
      .replace('NAMESPACE', opts.namespace ?? 'team-a'),
  ) as Record<string, unknown>;
}

async function settle(expected: string): Promise<AppSetView> {
  await expect
    .poll(
      async () => {
        const a = (await call<AppSetView>('GET', '/api/v1/appsets/team-a-web')).body;
        return `${a.status} ${a.error?.code ?? '-'} ${a.targetCount}`;
      },
      { timeout: 60_000 },
    )
    .toBe(expected);
  return (await call<AppSetView>('GET', '/api/v1/appsets/team-a-web')).body;
}

async function targetNamespaces(): Promise<string[]> {
  const r = await call<{ name: string; namespace: string }[]>('GET', '/api/v1/targets?appSet=team-a-web');
  return r.body.map((t) => `${t.name}:${t.namespace}`).sort();
}

describe('projects', () => {
  beforeAll(async () => {
    repo = createTestGitRepo({
      'app/config.yaml': fixture('configmap.yaml'),
      'infra/role.yaml': fixture('clusterrole.yaml'),
    });
    other = createTestGitRepo({ 'app/config.yaml': fixture('configmap.yaml') });
    hub = await startTestHub();
    expect((await call('POST', '/api/v1/clusters', { name: 'c1', labels: { env: 'dev' } })).status).toBe(201);
    expect((await call('POST', '/api/v1/clusters', { name: 'c2', labels: { env: 'prod' } })).status).toBe(
      201,
    );
  }, 180_000);

  afterAll(async () => {
    await hub?.close();
    repo?.remove();
    other?.remove();
  }, 120_000);

  it('refuses an invalid project naming the field, and stores nothing', async () => {
    const bad = project((spec) => {
      spec['sourceRepos'] = [];
    });
    const r = await call<ErrorBody>('POST', '/api/v1/projects', bad);
    expect(r.status).toBe(400);
    expect(r.body).toMatchObject({ code: 'invalid-request', path: 'spec.sourceRepos' });
    expect(r.body.message).toContain('list at least one repository glob');
    const selector = project((spec) => {
      spec['destinations'] = [{ clusterSelector: { matchExpressions: [{ key: 'env', operator: 'In' }] } }];
    });
    const s = await call<ErrorBody>('POST', '/api/v1/projects', selector);
    expect(s.status).toBe(400);
    expect(s.body.path).toMatch(/^spec\.destinations\[0\]\./);
    expect((await call('GET', '/api/v1/projects')).body).toEqual([]);
  });

  it('refuses an appset naming a project that does not exist, storing nothing', async () => {
    const r = await call<ErrorBody>('POST', '/api/v1/appsets', appSet());
    expect(r.status).toBe(422);
    expect(r.body).toMatchObject({ code: 'project-not-found', path: 'spec.project' });
    expect((await call('GET', '/api/v1/appsets/team-a-web')).status).toBe(404);
  });

  it('expands an appset inside its project, and gives each cluster the project narrowed to it', async () => {
    expect((await call('POST', '/api/v1/projects', project())).status).toBe(201);
    expect((await call('POST', '/api/v1/appsets', appSet())).status).toBe(201);
    const ready = await settle('Ready - 2');
    expect(ready.project).toBe('team-a');

    const gateway = hub.app.get(AgentGatewayService);
    const clusters = (await call<{ id: string; name: string }[]>('GET', '/api/v1/clusters')).body;
    const c2 = clusters.find((c) => c.name === 'c2');
    // Released after the expansion reports Ready (the rollout's release is its own step).
    await expect
      .poll(async () => (await gateway.assignments(c2?.id ?? '', 'c2')).assignments.length, {
        timeout: 30_000,
      })
      .toBe(1);
    const assigned = await gateway.assignments(c2?.id ?? '', 'c2');
    expect(assigned.assignments[0]?.project).toEqual({
      name: 'team-a',
      namespaces: ['team-a'],
      clusterResourceWhitelist: [],
      clusterResourceBlacklist: [],
      namespaceResourceBlacklist: [],
    });
  }, 120_000);

  it('refuses at submission a repository outside the project, naming the field', async () => {
    const r = await call<ErrorBody>('POST', '/api/v1/appsets', appSet({ repoUrl: other.url }));
    expect(r.status).toBe(403);
    expect(r.body).toMatchObject({
      code: 'repo-not-permitted',
      path: 'spec.template.spec.source.repoURL',
    });
    const repos = (await call<{ url: string }[]>('GET', '/api/v1/repositories')).body;
    expect(repos.map((x) => x.url)).not.toContain(other.url);
    await settle('Ready - 2');
  });

  it('puts an appset reaching another namespace in Error, naming the target and field; targets untouched', async () => {
    const before = await targetNamespaces();
    expect((await call('POST', '/api/v1/appsets', appSet({ namespace: 'kube-system' }))).status).toBe(200);
    const failed = await settle('Error destination-not-permitted 2');
    expect(failed.error?.path).toBe('targets[0] (team-a-web-c1).spec.destination');
    expect(failed.error?.message).toBe(
      "destination cluster 'c1', namespace 'kube-system' is not among the destinations of project 'team-a'",
    );
    expect(await targetNamespaces()).toEqual(before);
  }, 120_000);

  it('puts an appset creating a cluster-scoped kind outside the whitelist in Error', async () => {
    expect((await call('POST', '/api/v1/appsets', appSet({ path: 'infra' }))).status).toBe(200);
    const failed = await settle('Error kind-not-permitted 2');
    expect(failed.error?.message).toContain(
      "rbac.authorization.k8s.io/ClusterRole 'team-a-admin': cluster-scoped kind ClusterRole is not permitted by project 'team-a'",
    );
  }, 120_000);

  it('re-checks the appsets of a project that narrows, and refuses to delete a project in use', async () => {
    expect((await call('POST', '/api/v1/appsets', appSet())).status).toBe(200);
    await settle('Ready - 2');
    const narrowed = project((spec) => {
      spec['destinations'] = [{ cluster: 'c1', namespace: 'team-a' }];
    });
    expect((await call('POST', '/api/v1/projects', narrowed)).status).toBe(200);
    const failed = await settle('Error destination-not-permitted 2');
    expect(failed.error?.path).toBe('targets[1] (team-a-web-c2).spec.destination');

    const del = await call<ErrorBody>('DELETE', '/api/v1/projects/team-a');
    expect(del.status).toBe(409);
    expect(del.body).toMatchObject({ code: 'project-in-use' });
    expect(del.body.message).toContain('team-a-web');

    const audit = await call<{ items: { action: string }[] }>('GET', '/api/v1/audit?scope=project:team-a');
    expect(audit.body.items.map((e) => e.action).sort()).toEqual(['project.created', 'project.updated']);
  }, 120_000);
});
