import { KubeConfig } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Assignment, type KubeObject, TRACKING_ANNOTATION, assignmentSchema } from '@flotilla/contract';
import { type SimClusterHandle, startSimCluster } from '@flotilla/kube-sim';
import { type HealthAssessor } from '../health/target-health.js';
import { type KubeClient, createKubeClient } from '../kube/kube-client.js';
import { defaultHealthAssessor } from '../lib-adapters.js';
import { loadFixture } from '../testing/agent-harness.js';
import { type SyncInput, syncTarget } from './sync-target.js';
import { MAX_WAVE_WAIT_MS, waitBudgetMs } from './sync-waits.js';

const manifests = loadFixture('bundle-web.yaml');

/**
 * Waits until the simulated Deployment controller has finished rolling `web` out. Until then it
 * writes the Deployment's status, which moves its resourceVersion, and a no-op apply racing with
 * such a write would look like a change.
 */
async function rolledOut(kube: KubeClient): Promise<void> {
  await expect
    .poll(
      async () => {
        const d = (await kube.get({
          apiVersion: 'apps/v1',
          kind: 'Deployment',
          namespace: 'shop',
          name: 'web',
        })) as
          | {
              metadata: { generation?: number };
              spec?: { replicas?: number };
              status?: Record<string, number>;
            }
          | undefined;
        const s = d?.status ?? {};
        return (
          s['observedGeneration'] === d?.metadata.generation &&
          s['updatedReplicas'] === d?.spec?.replicas &&
          s['readyReplicas'] === d?.spec?.replicas &&
          s['availableReplicas'] === d?.spec?.replicas
        );
      },
      { timeout: 15_000, interval: 50 },
    )
    .toBe(true);
}

function assignment(syncPolicy: Record<string, boolean> = {}, name = 'web-a'): Assignment {
  return assignmentSchema.parse({
    targetId: `t-${name}`,
    name,
    appSet: 'web',
    namespace: 'shop',
    revision: 'r1',
    bundleDigest: `sha256:${'0'.repeat(64)}`,
    syncPolicy,
  });
}

describe('waitBudgetMs', () => {
  const withDeadline = (seconds?: number): KubeObject => ({
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name: 'web' },
    spec: seconds === undefined ? {} : { progressDeadlineSeconds: seconds },
  });
  it("waits the agent's timeout, or an object's own progress deadline and 30 s when longer, at most an hour", () => {
    expect(waitBudgetMs([withDeadline()], 300_000)).toBe(300_000);
    expect(waitBudgetMs([withDeadline(60)], 300_000)).toBe(300_000);
    expect(waitBudgetMs([withDeadline(60), withDeadline(600)], 300_000)).toBe(630_000);
    expect(waitBudgetMs([withDeadline(2_147_483_647)], 300_000)).toBe(MAX_WAVE_WAIT_MS);
  });
});

describe('syncTarget against a simulated cluster', () => {
  let sim: SimClusterHandle;
  let kube: KubeClient;
  let health: HealthAssessor;
  beforeAll(async () => {
    health = await defaultHealthAssessor();
    sim = await startSimCluster({ name: 'sync' });
    const kc = new KubeConfig();
    kc.loadFromString(sim.kubeconfig());
    kube = createKubeClient(kc);
  });
  afterAll(async () => {
    await sim.stop();
  });

  const sync = (over: Partial<SyncInput> & { assignment: Assignment }) =>
    syncTarget({ kube, health, manifests, inventory: [], trigger: 'auto', pollMs: 50, ...over });
  const actions = (r: Awaited<ReturnType<typeof syncTarget>>) =>
    r.report.resources.map((x) => `${x.kind}/${x.name}:${x.action}`);

  it('refuses the whole revision when a sync wave is unreadable, applying nothing', async () => {
    const bad: KubeObject[] = [
      {
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: { name: 'bad-wave', annotations: { 'flotilla.dev/sync-wave': 'x' } },
      },
      ...manifests,
    ];
    const r = await sync({ assignment: assignment(), manifests: bad });
    expect(r.report.outcome).toBe('Failed');
    expect(r.report.message).toContain('ConfigMap bad-wave metadata.annotations["flotilla.dev/sync-wave"]');
    expect(r.report.resources).toEqual([]);
    expect(await kube.get({ apiVersion: 'v1', kind: 'Namespace', name: 'shop' })).toBeUndefined();
  });

  it('applies what it can and reports the API error for an unknown kind (Partial)', async () => {
    const withWidget: KubeObject[] = [
      ...manifests,
      { apiVersion: 'example.com/v1', kind: 'Widget', metadata: { name: 'w' } },
    ];
    const r = await sync({ assignment: assignment(), manifests: withWidget });
    expect(r.report.outcome).toBe('Partial');
    expect(actions(r)).toEqual([
      'Namespace/shop:applied',
      'ConfigMap/web-config:applied',
      'Deployment/web:applied',
      'Widget/w:failed',
    ]);
    expect(r.report.resources.at(-1)?.message).toMatch(
      /^the cluster does not serve example\.com\/v1 \(looking up kind Widget\): /,
    );
    expect(r.inventory.map((i) => `${i.kind}/${i.namespace ?? ''}/${i.name}`)).toEqual([
      'Namespace//shop',
      'ConfigMap/shop/web-config',
      'Deployment/shop/web',
    ]);
  });

  it('never prunes everything for an empty revision unless allowEmpty', async () => {
    const first = await sync({ assignment: assignment() });
    const refused = await sync({ assignment: assignment(), manifests: [], inventory: first.inventory });
    expect(refused.report.resources).toEqual([]);
    expect(refused.report.message).toContain('refusing to prune all 3');
    expect(refused.inventory).toEqual(first.inventory);
    expect(
      await kube.get({ apiVersion: 'apps/v1', kind: 'Deployment', namespace: 'shop', name: 'web' }),
    ).toBeDefined();
  });

  it('keeps tracking but does not delete with prune off, nor during a heal', async () => {
    const first = await sync({ assignment: assignment() });
    const noConfigMap = manifests.filter((m) => m.kind !== 'ConfigMap');
    const kept = await sync({
      assignment: assignment({ prune: false }),
      manifests: noConfigMap,
      inventory: first.inventory,
    });
    expect(kept.report.message).toContain('prune is off');
    expect(kept.inventory.map((i) => i.name)).toContain('web-config');
    await rolledOut(kube);
    const heal = await sync({
      assignment: assignment(),
      manifests: noConfigMap,
      inventory: kept.inventory,
      trigger: 'self-heal',
      only: new Set(['apps/Deployment/shop/web']),
    });
    expect(actions(heal)).toEqual(['Deployment/web:unchanged']);
    expect(heal.inventory.map((i) => i.name)).toContain('web-config');
  });

  it('prunes only objects still carrying its own tracking annotation', async () => {
    const first = await sync({ assignment: assignment() });
    // Another target took the ConfigMap over.
    const cm = await kube.get({ apiVersion: 'v1', kind: 'ConfigMap', namespace: 'shop', name: 'web-config' });
    expect(cm?.metadata.annotations?.[TRACKING_ANNOTATION]).toBe('web-a');
    await syncTarget({
      kube,
      health,
      assignment: assignment({}, 'web-b'),
      manifests: manifests.filter((m) => m.kind === 'ConfigMap'),
      inventory: [],
      trigger: 'auto',
    });
    await rolledOut(kube);
    const r = await sync({
      assignment: assignment(),
      manifests: manifests.filter((m) => m.kind !== 'ConfigMap'),
      inventory: first.inventory,
    });
    expect(actions(r)).toEqual(['Namespace/shop:unchanged', 'Deployment/web:unchanged']);
    expect(r.inventory.map((i) => i.name)).toEqual(['shop', 'web']);
    expect(
      await kube.get({ apiVersion: 'v1', kind: 'ConfigMap', namespace: 'shop', name: 'web-config' }),
    ).toBeDefined();
  });

  it('reports a no-op apply as unchanged although a controller wrote status and an annotation in between', async () => {
    await sync({ assignment: assignment() });
    await rolledOut(kube);
    const deployments = sim.api.rt('apps', 'v1', 'deployments');
    let statusWrites = 0;
    // Another writer updates the Deployment's status and an annotation of its own between the agent's
    // read and its apply, as the Deployment controller does: resourceVersion moves, nothing of ours does.
    const racing: KubeClient = {
      ...kube,
      apply: async (obj) => {
        if (obj.kind === 'Deployment') {
          ++statusWrites;
          sim.api.patch(
            deployments,
            'shop',
            'web',
            'merge',
            { status: { collisionCount: statusWrites } },
            { manager: 'status-writer', subresource: 'status' },
          );
          // …and its own annotation, as the Deployment controller writes the revision.
          sim.api.patch(
            deployments,
            'shop',
            'web',
            'merge',
            { metadata: { annotations: { 'example.com/observed': String(statusWrites) } } },
            { manager: 'status-writer' },
          );
        }
        return kube.apply(obj);
      },
    };
    const before = await kube.get({
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      namespace: 'shop',
      name: 'web',
    });
    const same = await sync({ assignment: assignment(), kube: racing });
    const after = same.live.get('apps/Deployment/shop/web');
    expect(after?.metadata['resourceVersion']).not.toBe(before?.metadata['resourceVersion']);
    expect(actions(same)).toEqual([
      'Namespace/shop:unchanged',
      'ConfigMap/web-config:unchanged',
      'Deployment/web:unchanged',
    ]);

    // A real change under the same race is still `applied`.
    const scaled = manifests.map((m) =>
      m.kind === 'Deployment' ? { ...m, spec: { ...(m['spec'] as object), replicas: 3 } } : m,
    );
    const changed = await sync({ assignment: assignment(), kube: racing, manifests: scaled });
    expect(actions(changed)).toContain('Deployment/web:applied');
    expect(statusWrites).toBe(2);
  });

  it('keeps the live value of ignored fields when respectIgnoreDifferences is on, and only then', async () => {
    const withRule = (respect: boolean): Assignment =>
      assignmentSchema.parse({
        ...assignment(),
        syncPolicy: { respectIgnoreDifferences: respect },
        ignoreDifferences: [{ group: 'apps', kind: 'Deployment', jsonPointers: ['/spec/replicas'] }],
      });
    await sync({ assignment: withRule(true) });
    const web = { apiVersion: 'apps/v1', kind: 'Deployment', namespace: 'shop', name: 'web' };
    const replicas = async (): Promise<unknown> =>
      ((await kube.get(web)) as { spec?: { replicas?: number } } | undefined)?.spec?.replicas;
    // Someone (an autoscaler, a person) scales the Deployment out of band.
    sim.api.patch(
      sim.api.rt('apps', 'v1', 'deployments'),
      'shop',
      'web',
      'merge',
      { spec: { replicas: 5 } },
      {
        manager: 'kubectl-scale',
      },
    );
    const kept = await sync({ assignment: withRule(true) });
    expect(kept.report.outcome).toBe('Succeeded');
    expect(await replicas()).toBe(5);
    // The prepared object (what drift compares against) still says what Git says.
    expect(
      (kept.desired.find((d) => d.kind === 'Deployment')?.['spec'] as { replicas: number }).replicas,
    ).toBe(2);

    const reverted = await sync({ assignment: withRule(false) });
    expect(reverted.report.outcome).toBe('Succeeded');
    expect(await replicas()).toBe(2);
  });
});
