import { KubeConfig } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Assignment, type KubeObject, assignmentSchema } from '@flotilla/contract';
import { type SimClusterHandle, startSimCluster } from '@flotilla/kube-sim';
import { type HealthAssessor } from '../health/target-health.js';
import { type KubeClient, createKubeClient } from '../kube/kube-client.js';
import { defaultHealthAssessor } from '../lib-adapters.js';
import { loadFixture } from '../testing/agent-harness.js';
import { dryRunSync } from './dry-run-sync.js';
import { type SyncInput, syncTarget } from './sync-target.js';

const manifests = loadFixture('bundle-web.yaml');
const web = { apiVersion: 'apps/v1', kind: 'Deployment', namespace: 'shop', name: 'web' };

function assignment(syncPolicy: Record<string, unknown> = { prune: true }, name = 'web-a'): Assignment {
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

/** Deletion safety on a bad day: what must never be deleted, whatever the cluster answers. */
describe('sync deletion safety against a simulated cluster', () => {
  let sim: SimClusterHandle;
  let health: HealthAssessor;
  /** A new client per sync: its discovery cache starts empty, as after an agent restart. */
  const freshKube = (): KubeClient => {
    const kc = new KubeConfig();
    kc.loadFromString(sim.kubeconfig());
    return createKubeClient(kc);
  };
  beforeAll(async () => {
    health = await defaultHealthAssessor();
    sim = await startSimCluster({ name: 'sync-safety' });
  });
  afterAll(async () => {
    await sim.stop();
  });

  const sync = (over: Partial<SyncInput> & { assignment: Assignment }) =>
    syncTarget({ kube: freshKube(), health, manifests, inventory: [], trigger: 'auto', pollMs: 50, ...over });

  it('prunes nothing when a discovery call fails during the sync', async () => {
    const first = await sync({ assignment: assignment() });
    expect(first.report.outcome).toBe('Succeeded');
    // The next revision drops the ConfigMap; discovery of apps/v1 fails once (a transient error).
    sim.faults.failPath = [{ path: '/apis/apps/v1', status: 503 }];
    const second = await sync({
      assignment: assignment(),
      manifests: manifests.filter((m: KubeObject) => m.kind !== 'ConfigMap'),
      inventory: first.inventory,
    });
    expect(sim.faults.failPath[0]?.times).toBe(0);
    expect(second.report.outcome).toBe('Partial');
    expect(second.report.resources.find((r) => r.kind === 'Deployment')?.action).toBe('failed');
    expect(second.report.resources.some((r) => r.action === 'pruned')).toBe(false);
    expect(second.report.message).toContain('nothing pruned');
    const kube = freshKube();
    expect(await kube.get(web)).toBeDefined();
    expect(
      await kube.get({ apiVersion: 'v1', kind: 'ConfigMap', namespace: 'shop', name: 'web-config' }),
    ).toBeDefined();
    // Both stay tracked, so the next good run prunes the ConfigMap and keeps the Deployment.
    expect(second.inventory.map((i) => i.name).sort()).toEqual(['shop', 'web', 'web-config']);
    const third = await sync({
      assignment: assignment(),
      manifests: manifests.filter((m: KubeObject) => m.kind !== 'ConfigMap'),
      inventory: second.inventory,
    });
    expect(third.report.resources.filter((r) => r.action === 'pruned').map((r) => r.name)).toEqual([
      'web-config',
    ]);
    expect(await kube.get(web)).toBeDefined();
  });

  it('never prunes an object that says Prune=false, and keeps tracking it', async () => {
    const withKeep = structuredClone(manifests).map((m: KubeObject) =>
      m.kind === 'ConfigMap'
        ? {
            ...m,
            metadata: {
              ...m.metadata,
              name: 'keep-me',
              annotations: { 'argocd.argoproj.io/sync-options': 'Prune=false' },
            },
          }
        : m,
    );
    const a = assignment({ prune: true }, 'keep-a');
    const first = await sync({ assignment: a, manifests: withKeep });
    expect(first.report.outcome).toBe('Succeeded');
    const keepId = { apiVersion: 'v1', kind: 'ConfigMap', namespace: 'shop', name: 'keep-me' };
    // Git drops it; prune is on; the object's own annotation keeps it, in a sync and in a dry run.
    const rest = withKeep.filter((m: KubeObject) => m.kind !== 'ConfigMap');
    const second = await sync({ assignment: a, manifests: rest, inventory: first.inventory });
    expect(second.report.outcome).toBe('Succeeded');
    expect(second.report.resources.find((r) => r.name === 'keep-me')).toMatchObject({
      action: 'unchanged',
      message: 'Prune=false: left in place, no longer declared',
    });
    expect(await freshKube().get(keepId)).toBeDefined();
    expect(second.inventory.map((i) => i.name)).toContain('keep-me');
    const third = await sync({ assignment: a, manifests: rest, inventory: second.inventory });
    expect(third.report.resources.some((r) => r.action === 'pruned')).toBe(false);
    expect(await freshKube().get(keepId)).toBeDefined();
  });

  it('refuses to apply an object whose sync option it cannot honour, and prunes nothing', async () => {
    const bad = structuredClone(manifests).map((m: KubeObject) =>
      m.kind === 'Deployment'
        ? {
            ...m,
            metadata: {
              ...m.metadata,
              annotations: { 'argocd.argoproj.io/sync-options': 'Prune=confirm' },
            },
          }
        : m,
    );
    const a = assignment({ prune: true }, 'refuse-a');
    const r = await sync({ assignment: a, manifests: bad });
    const deployment = r.report.resources.find((x) => x.kind === 'Deployment');
    expect(deployment?.action).toBe('failed');
    expect(deployment?.message).toMatch(
      /^metadata\.annotations\["argocd\.argoproj\.io\/sync-options"\]\[0\]: Prune=confirm is not supported/,
    );
    expect(r.report.outcome).toBe('Partial');
  });

  it('CreateNamespace=true creates the destination namespace with its metadata, untracked', async () => {
    const a = assignmentSchema.parse({
      ...assignment({ prune: true }, 'ns-a'),
      namespace: 'made-for-me',
      syncPolicy: {
        prune: true,
        createNamespace: true,
        managedNamespaceMetadata: { labels: { team: 'shop' }, annotations: { owner: 'web' } },
      },
    });
    const objects = manifests.filter((m: KubeObject) => m.kind === 'ConfigMap');
    const preview = await dryRunSync({
      kube: freshKube(),
      assignment: a,
      manifests: objects,
      inventory: [],
      prune: false,
    });
    expect(preview.resources.map((r) => `${r.kind}/${r.name} ${r.message}`)).toEqual([
      'Namespace/made-for-me would be created (CreateNamespace=true)',
      'ConfigMap/web-config would be created (its namespace too)',
    ]);
    const nsId = { apiVersion: 'v1', kind: 'Namespace', name: 'made-for-me' };
    expect(await freshKube().get(nsId)).toBeUndefined();

    const r = await sync({ assignment: a, manifests: objects });
    expect(r.report.outcome).toBe('Succeeded');
    expect(r.report.resources[0]).toMatchObject({
      kind: 'Namespace',
      name: 'made-for-me',
      action: 'applied',
    });
    const ns = await freshKube().get(nsId);
    expect(ns?.metadata.labels?.['team']).toBe('shop');
    expect(ns?.metadata.annotations?.['owner']).toBe('web');
    expect(r.inventory.map((i) => i.kind)).toEqual(['ConfigMap']);
    // Again: nothing to change; with prune on and the ConfigMap gone, the namespace is never pruned.
    const again = await sync({ assignment: a, manifests: [], inventory: r.inventory });
    expect(again.report.resources[0]).toMatchObject({ kind: 'Namespace', action: 'unchanged' });
    expect(await freshKube().get(nsId)).toBeDefined();
  });

  it('without CreateNamespace, a missing destination namespace fails the objects and creates nothing', async () => {
    const a = assignmentSchema.parse({ ...assignment({ prune: true }, 'ns-b'), namespace: 'not-there' });
    const r = await sync({
      assignment: a,
      manifests: manifests.filter((m: KubeObject) => m.kind === 'ConfigMap'),
    });
    expect(r.report.outcome).toBe('Failed');
    expect(await freshKube().get({ apiVersion: 'v1', kind: 'Namespace', name: 'not-there' })).toBeUndefined();
  });

  describe('a sync ends with a report, whatever happens in the middle', () => {
    const ns: KubeObject = { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'mid' } };
    const cm = (name: string, annotations: Record<string, string> = {}): KubeObject => ({
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name, annotations },
      data: { k: name },
    });
    const midAssignment = () =>
      assignmentSchema.parse({ ...assignment(), targetId: 't-mid', name: 'mid', namespace: 'mid' });
    const hookId = { apiVersion: 'v1', kind: 'ConfigMap', namespace: 'mid', name: 'on-fail' };

    it('turns an API error while waiting for a wave into a Failed run that runs SyncFail hooks', async () => {
      // The first read of `first` (before its apply) passes; the wave's read-back fails.
      sim.faults.failPath = [
        { path: '/api/v1/namespaces/mid/configmaps/first', method: 'GET', status: 500, after: 1 },
      ];
      const r = await sync({
        assignment: midAssignment(),
        manifests: [
          ns,
          cm('first', { 'argocd.argoproj.io/sync-wave': '-1' }),
          cm('second'),
          cm('on-fail', { 'argocd.argoproj.io/hook': 'SyncFail' }),
        ],
      });
      expect(sim.faults.failPath[0]?.times).toBe(0);
      expect(r.report.outcome).toBe('Failed');
      expect(r.report.message).toContain('simulated failure of /api/v1/namespaces/mid/configmaps/first');
      expect(r.report.resources.map((x) => `${x.hookPhase ?? '-'} ${x.name}:${x.action}`)).toEqual([
        '- mid:applied',
        '- first:applied',
        'SyncFail on-fail:applied',
      ]);
      expect(r.inventory.map((i) => i.name)).toEqual(['mid', 'first']);
      expect(r.interrupted).toBe(false);
      await freshKube().delete(hookId);
    });

    it('does not run SyncFail hooks when the agent stops during a wave wait', async () => {
      const stopping = new AbortController();
      const running = sync({
        assignment: midAssignment(),
        manifests: [
          ns,
          {
            apiVersion: 'apps/v1',
            kind: 'Deployment',
            metadata: { name: 'stuck' },
            spec: {
              replicas: 1,
              selector: { matchLabels: { app: 'stuck' } },
              template: {
                metadata: { labels: { app: 'stuck' } },
                spec: { containers: [{ name: 'main', image: 'nginx:1.27-unready' }] },
              },
            },
          },
          cm('later', { 'argocd.argoproj.io/sync-wave': '1' }),
          cm('on-fail', { 'argocd.argoproj.io/hook': 'SyncFail' }),
        ],
        signal: stopping.signal,
        waitTimeoutMs: 60_000,
      });
      const kube = freshKube();
      await expect
        .poll(() => kube.get({ ...web, namespace: 'mid', name: 'stuck' }), { timeout: 10_000, interval: 50 })
        .toBeDefined();
      stopping.abort();
      const r = await running;
      expect(r.interrupted).toBe(true);
      expect(r.report.message).toContain('the agent is stopping');
      expect(r.report.resources.some((x) => x.hookPhase === 'SyncFail')).toBe(false);
      expect(await kube.get(hookId)).toBeUndefined();
    });
  });
});
