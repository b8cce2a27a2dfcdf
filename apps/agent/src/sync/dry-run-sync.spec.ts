import { KubeConfig } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Assignment, type KubeObject, assignmentSchema } from '@flotilla/contract';
import { type SimClusterHandle, startSimCluster } from '@flotilla/kube-sim';
import { type KubeClient, createKubeClient } from '../kube/kube-client.js';
import { defaultHealthAssessor } from '../lib-adapters.js';
import { type ResourceId } from '../state/state-store.js';
import { loadFixture } from '../testing/agent-harness.js';
import { dryRunSync } from './dry-run-sync.js';
import { syncTarget } from './sync-target.js';

const web = loadFixture('bundle-web.yaml');

function assignment(name: string, namespace: string, syncPolicy: Record<string, boolean> = {}): Assignment {
  return assignmentSchema.parse({
    targetId: `t-${name}`,
    name,
    appSet: 'web',
    namespace,
    revision: 'r2',
    bundleDigest: `sha256:${'1'.repeat(64)}`,
    syncPolicy,
  });
}

/** The next revision of the web bundle: 3 replicas, a new Service, the ConfigMap gone. */
const next: KubeObject[] = [
  ...web
    .filter((o) => o.kind !== 'ConfigMap')
    .map((o) =>
      o.kind === 'Deployment'
        ? { ...o, spec: { ...(o['spec'] as Record<string, unknown>), replicas: 3 } }
        : o,
    ),
  {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { name: 'web' },
    spec: { selector: { app: 'web' }, ports: [{ port: 80 }] },
  },
];

/** dryRunSync on a simulated cluster (real HTTP): what a sync would do, and the cluster unchanged. */
describe('dryRunSync against a simulated cluster', () => {
  let sim: SimClusterHandle;
  let kube: KubeClient;
  let inventory: ResourceId[];
  const deployment = { apiVersion: 'apps/v1', kind: 'Deployment', namespace: 'shop', name: 'web' };

  beforeAll(async () => {
    sim = await startSimCluster({ name: 'dry-run' });
    const kc = new KubeConfig();
    kc.loadFromString(sim.kubeconfig());
    kube = createKubeClient(kc);
    const synced = await syncTarget({
      kube,
      health: await defaultHealthAssessor(),
      manifests: web,
      inventory: [],
      trigger: 'auto',
      pollMs: 50,
      assignment: assignment('web-a', 'shop'),
    });
    expect(synced.report.outcome).toBe('Succeeded');
    inventory = synced.inventory;
  });
  afterAll(async () => {
    await sim.stop();
  });

  const summary = (r: Awaited<ReturnType<typeof dryRunSync>>) =>
    r.resources.map((x) => `${x.kind}/${x.name}:${x.action}${x.message ? ` (${x.message})` : ''}`);

  it('says what it would create, change and prune, and changes nothing', async () => {
    // The simulated Deployment controller annotates the revision it rolled out shortly after the
    // first sync: the snapshot is taken once it has, so only the dry run could change it after.
    await expect
      .poll(
        async () => (await kube.get(deployment))?.metadata.annotations?.['deployment.kubernetes.io/revision'],
        { timeout: 15_000, interval: 50 },
      )
      .toBeDefined();
    const before = await kube.get(deployment);
    const r = await dryRunSync({
      kube,
      assignment: assignment('web-a', 'shop'),
      manifests: next,
      inventory,
      prune: true,
    });
    expect(r).toMatchObject({
      type: 'sync',
      trigger: 'manual',
      outcome: 'Succeeded',
      dryRun: true,
      revision: 'r2',
    });
    expect(r.message).toBe('dry run: nothing changed');
    expect(summary(r).sort()).toEqual([
      'ConfigMap/web-config:pruned (would be pruned)',
      'Deployment/web:applied (would be changed)',
      'Namespace/shop:unchanged',
      'Service/web:applied (would be created)',
    ]);
    const after = await kube.get(deployment);
    expect((after?.['spec'] as { replicas: number }).replicas).toBe(2);
    // Not the resourceVersion: the simulated Deployment controller may still write status. What an
    // apply would change — the spec, metadata and this agent's field ownership — is as it was.
    const written = (o: typeof after) => ({
      spec: o?.['spec'],
      labels: o?.metadata.labels,
      annotations: o?.metadata.annotations,
      applied: (
        o?.metadata as { managedFields?: { manager: string; operation: string }[] }
      )?.managedFields?.filter((f) => f.manager === 'flotilla' && f.operation === 'Apply'),
    });
    expect(written(after)).toEqual(written(before));
    expect(written(before).applied).toHaveLength(1);
    expect(
      await kube.get({ apiVersion: 'v1', kind: 'Service', namespace: 'shop', name: 'web' }),
    ).toBeUndefined();
    expect(
      await kube.get({ apiVersion: 'v1', kind: 'ConfigMap', namespace: 'shop', name: 'web-config' }),
    ).toBeDefined();
  });

  it('with prune off lists nothing as pruned and says what would be left in place', async () => {
    const r = await dryRunSync({
      kube,
      assignment: assignment('web-a', 'shop', { prune: false }),
      manifests: next,
      inventory,
      prune: false,
    });
    expect(r.resources.some((x) => x.action === 'pruned')).toBe(false);
    expect(r.message).toContain('1 object(s) no longer declared; prune is off, they would be left in place');
  });

  it('reports the objects of a namespace the sync would create as created, and creates neither', async () => {
    const fresh = web.map((o) => (o.kind === 'Namespace' ? { ...o, metadata: { name: 'shop-2' } } : o));
    const r = await dryRunSync({
      kube,
      assignment: assignment('web-b', 'shop-2'),
      manifests: fresh,
      inventory: [],
      prune: false,
    });
    expect(r.outcome).toBe('Succeeded');
    expect(summary(r)).toEqual([
      'Namespace/shop-2:applied (would be created)',
      'ConfigMap/web-config:applied (would be created (its namespace too))',
      'Deployment/web:applied (would be created (its namespace too))',
    ]);
    expect(await kube.get({ apiVersion: 'v1', kind: 'Namespace', name: 'shop-2' })).toBeUndefined();
  });

  it('refuses what a sync refuses for its hook annotations, naming the annotation, as a failed dry run', async () => {
    const typo: KubeObject = {
      apiVersion: 'batch/v1',
      kind: 'Job',
      metadata: { name: 'migrate', annotations: { 'helm.sh/hook': 'pre-instal' } },
    };
    const r = await dryRunSync({
      kube,
      assignment: assignment('web-a', 'shop'),
      manifests: [...web, typo],
      inventory: [],
      prune: false,
    });
    expect(r.outcome).toBe('Failed');
    expect(r.message).toMatch(
      /^dry run: nothing changed; Job migrate metadata\.annotations\["helm\.sh\/hook"\]: unknown Helm hook "pre-instal"/,
    );
    expect(r.resources).toEqual([]);
  });

  it('reports what the server refuses as failed, with its message', async () => {
    const bad = [
      {
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: { name: 'Not_Valid' },
        data: { a: 'b' },
      } as KubeObject,
    ];
    const r = await dryRunSync({
      kube,
      assignment: assignment('web-a', 'shop'),
      manifests: bad,
      inventory: [],
      prune: false,
    });
    expect(r.outcome).toBe('Failed');
    expect(r.resources[0]).toMatchObject({ kind: 'ConfigMap', action: 'failed' });
    expect(r.resources[0]?.message).not.toBe('');
  });
});
