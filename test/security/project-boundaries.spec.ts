import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { KubeConfig, KubernetesObjectApi, type KubernetesObject } from '@kubernetes/client-node';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startAgent, loadAgentConfig, type Agent } from '@flotilla/agent';
import { createTestGitRepo, type TestGitRepo, type TestHub } from '@flotilla/hub/testing';
import { startSimCluster, type SimClusterHandle } from '@flotilla/kube-sim';
import { caller, startSecureHub, tableCounts, type Refusal } from './security-hub.js';

// An ApplicationSet reaching outside its project, on a real hub (PostgreSQL, Redis, Git) with a real
// agent on a simulated cluster: the hub refuses what it can judge (repositories, destinations,
// built-in cluster-scoped kinds) and changes nothing; what only the cluster can judge (a custom
// cluster-scoped kind) the agent refuses before applying anything, and reports a Failed sync naming it.

const configMap = 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web\ndata:\n  greeting: hello\n';
const clusterRole =
  'apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata:\n  name: escalate\nrules: []\n';
const widget = 'apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: cluster-wide\nspec: {}\n';

let hub: TestHub;
let call: ReturnType<typeof caller>;
let repo: TestGitRepo;
let elsewhere: TestGitRepo;
let sim: SimClusterHandle;
let k8s: KubernetesObjectApi;
let agent: Agent | undefined;
let stateDir: string;

function appSet(name: string, opts: { repoUrl?: string; path?: string; namespace?: string }) {
  return {
    apiVersion: 'flotilla.dev/v1alpha1',
    kind: 'ApplicationSet',
    metadata: { name },
    spec: {
      project: 'team-a',
      generators: [{ list: { elements: [{ cluster: 'east' }] } }],
      template: {
        metadata: { name: `${name}-{{cluster}}` },
        spec: {
          source: { repoURL: opts.repoUrl ?? repo.url, targetRevision: 'main', path: opts.path ?? 'app' },
          destination: { name: '{{cluster}}', namespace: opts.namespace ?? 'team-a' },
        },
      },
    },
  };
}

async function appSetState(name: string): Promise<string> {
  const r = await call<{ status: string; error: Refusal | null }>('GET', `/api/v1/appsets/${name}`);
  return `${r.body.status} ${r.body.error?.code ?? '-'}`;
}

describe('an ApplicationSet reaching outside its project', () => {
  beforeAll(async () => {
    repo = createTestGitRepo({
      'app/config.yaml': configMap,
      'rbac/role.yaml': clusterRole,
      'widget/widget.yaml': widget,
    });
    elsewhere = createTestGitRepo({ 'app/config.yaml': configMap });
    hub = await startSecureHub({ RATE_LIMIT_PEOPLE_PER_MINUTE: '1000' });
    call = caller(hub);
    sim = await startSimCluster({ name: 'east' });
    const kc = new KubeConfig();
    kc.loadFromString(sim.kubeconfig());
    k8s = KubernetesObjectApi.makeApiClient(kc);
    // A cluster-scoped custom kind the cluster serves; the hub cannot know its scope from the bundle.
    await k8s.create({
      apiVersion: 'apiextensions.k8s.io/v1',
      kind: 'CustomResourceDefinition',
      metadata: { name: 'widgets.example.com' },
      spec: {
        group: 'example.com',
        scope: 'Cluster',
        names: { plural: 'widgets', singular: 'widget', kind: 'Widget' },
        versions: [
          {
            name: 'v1',
            served: true,
            storage: true,
            // client-node's typed model knows the extension by this name only; the wire name would be
            // dropped, leaving a schema that prunes every field of a Widget.
            schema: { openAPIV3Schema: { type: 'object', x_kubernetes_preserve_unknown_fields: true } },
          },
        ],
      },
    } as KubernetesObject);

    const cluster = await call<{ bootstrapToken: string }>('POST', '/api/v1/clusters', {
      body: { name: 'east' },
    });
    expect(cluster.status).toBe(201);
    const project = await call('POST', '/api/v1/projects', {
      body: {
        apiVersion: 'flotilla.dev/v1alpha1',
        kind: 'Project',
        metadata: { name: 'team-a' },
        spec: {
          sourceRepos: [repo.url],
          destinations: [{ cluster: 'east', namespace: 'team-a' }],
          clusterResourceWhitelist: [{ group: '', kind: 'Namespace' }],
        },
      },
    });
    expect(project.status).toBe(201);
    stateDir = mkdtempSync(join(tmpdir(), 'flotilla-sec-agent-'));
    agent = await startAgent(
      loadAgentConfig({
        FLOTILLA_HUB_URL: hub.url,
        FLOTILLA_CLUSTER_NAME: 'east',
        FLOTILLA_BOOTSTRAP_TOKEN: cluster.body.bootstrapToken,
        FLOTILLA_STATE_DIR: stateDir,
      }),
      { kubeConfig: kc, longPollSeconds: 1, logger: pino({ level: 'silent' }), syncPollMs: 50 },
    );
  }, 180_000);

  afterAll(async () => {
    await agent?.stop();
    await sim?.stop();
    await hub?.close();
    repo?.remove();
    elsewhere?.remove();
    if (stateDir) rmSync(stateDir, { recursive: true, force: true });
  }, 120_000);

  it('refuses a repository outside the project at submission, changing nothing', async () => {
    // The agent registers and reports in the background: compare what a submission could touch.
    const touched = async () => {
      const { Repository, ApplicationSet, Target, Bundle } = await tableCounts(hub);
      return { Repository, ApplicationSet, Target, Bundle };
    };
    const before = await touched();
    const r = await call<Refusal>('POST', '/api/v1/appsets', {
      body: appSet('other-repo', { repoUrl: elsewhere.url }),
    });
    expect(r.status).toBe(403);
    expect(r.body).toMatchObject({ code: 'repo-not-permitted', path: 'spec.template.spec.source.repoURL' });
    expect(r.body.message).toContain(`repository '${elsewhere.url}' is not permitted by project 'team-a'`);
    expect(await touched()).toEqual(before);
    const audit = await call<{ items: unknown[] }>('GET', '/api/v1/audit?scope=appset:other-repo');
    expect(audit.body.items).toEqual([]);
  });

  it.each([
    [
      'another namespace',
      { namespace: 'kube-system' },
      'destination-not-permitted',
      "namespace 'kube-system'",
    ],
    ['a ClusterRole', { path: 'rbac' }, 'kind-not-permitted', "ClusterRole 'escalate'"],
  ])('puts an appset deploying to %s in Error: no target, no object', async (_what, opts, code, named) => {
    const name = `outside-${code}`;
    expect((await call('POST', '/api/v1/appsets', { body: appSet(name, opts) })).status).toBe(201);
    await expect.poll(() => appSetState(name), { timeout: 60_000 }).toBe(`Error ${code}`);
    const r = await call<{ error: Refusal }>('GET', `/api/v1/appsets/${name}`);
    expect(r.body.error.message).toContain(named);
    const targets = await call<unknown[]>('GET', `/api/v1/targets?appSet=${name}`);
    expect(targets.body).toEqual([]);
  });

  it('has the agent refuse a cluster-scoped custom kind only the cluster knows, applying nothing', async () => {
    expect(
      (await call('POST', '/api/v1/appsets', { body: appSet('widgets', { path: 'widget' }) })).status,
    ).toBe(201);
    await expect.poll(() => appSetState('widgets'), { timeout: 60_000 }).toBe('Ready -');
    type Runs = {
      items: { outcome: string; message: string; resources: { kind: string; message: string }[] }[];
    };
    await expect
      .poll(
        async () => (await call<Runs>('GET', '/api/v1/sync-runs?target=widgets-east')).body.items.length,
        {
          timeout: 60_000,
        },
      )
      .toBeGreaterThan(0);
    const run = (await call<Runs>('GET', '/api/v1/sync-runs?target=widgets-east')).body.items[0];
    expect(run?.outcome).toBe('Failed');
    // A refused revision is a failed sync like any other: the default retry policy says when it is tried again.
    expect(run?.message).toMatch(
      /^1 object\(s\) outside project 'team-a'; nothing applied; retry [1-5] of 5 in \d+s$/,
    );
    expect(run?.resources[0]?.message).toBe(
      "example.com/Widget 'cluster-wide': cluster-scoped kind Widget is not permitted by project 'team-a' (clusterResourceWhitelist)",
    );
    await expect(
      k8s.read({ apiVersion: 'example.com/v1', kind: 'Widget', metadata: { name: 'cluster-wide' } }),
    ).rejects.toThrow();
  }, 120_000);
});
