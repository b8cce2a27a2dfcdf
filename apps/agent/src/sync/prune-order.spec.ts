import { KubeConfig } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type KubeObject, assignmentSchema } from '@flotilla/contract';
import { type SimClusterHandle, startSimCluster } from '@flotilla/kube-sim';
import { type HealthAssessor } from '../health/target-health.js';
import { type KubeClient, createKubeClient } from '../kube/kube-client.js';
import { defaultHealthAssessor } from '../lib-adapters.js';
import { type ResourceId } from '../state/state-store.js';
import { pruneWaves } from './apply-order.js';
import { syncTarget } from './sync-target.js';

const configMap = (name: string, annotations: Record<string, string> = {}): KubeObject => ({
  apiVersion: 'v1',
  kind: 'ConfigMap',
  metadata: { name, annotations },
  data: { name },
});
const wave = (n: number, more: Record<string, string> = {}) => ({
  'argocd.argoproj.io/sync-wave': String(n),
  ...more,
});
const postSyncJob = (name: string): KubeObject => ({
  apiVersion: 'batch/v1',
  kind: 'Job',
  metadata: { name, annotations: { 'argocd.argoproj.io/hook': 'PostSync' } },
  spec: {
    template: { spec: { restartPolicy: 'Never', containers: [{ name: 'check', image: 'busybox:1' }] } },
  },
});

function assignment(name: string, syncPolicy: Record<string, unknown> = {}) {
  return assignmentSchema.parse({
    targetId: `t-${name}`,
    name,
    appSet: 'prune-order',
    namespace: name,
    revision: 'r1',
    bundleDigest: `sha256:${'0'.repeat(64)}`,
    syncPolicy: { prune: true, ...syncPolicy },
  });
}

describe('pruneWaves', () => {
  it("mirrors the pruned objects' own waves: the highest is pruned first", () => {
    const byWave = pruneWaves([
      configMap('a', wave(0)),
      configMap('b', wave(1)),
      configMap('c', wave(5)),
      configMap('d'),
    ]);
    expect([...byWave].map(([w, objs]) => [w, objs.map((o) => o.metadata.name)]).sort()).toEqual([
      [0, ['c']],
      [1, ['b']],
      [5, ['a', 'd']],
    ]);
    // An unreadable wave does not stop a prune: it counts as wave 0.
    expect([...pruneWaves([configMap('x', { 'argocd.argoproj.io/sync-wave': 'soon' })])]).toEqual([
      [0, [expect.objectContaining({ kind: 'ConfigMap' })]],
    ]);
  });
});

/** Prune inside the Sync phase in reverse wave order, PruneLast after, against kube-sim (#14). */
describe('when a sync prunes', () => {
  let sim: SimClusterHandle;
  let kube: KubeClient;
  let health: HealthAssessor;
  /** Every write the sync sent, in order: `apply Kind/name` or `delete Kind/name`. */
  const writes: string[] = [];
  beforeAll(async () => {
    health = await defaultHealthAssessor();
    sim = await startSimCluster({ name: 'prune-order' });
    const kc = new KubeConfig();
    kc.loadFromString(sim.kubeconfig());
    const real = createKubeClient(kc);
    kube = {
      ...real,
      apply: (obj, options) => {
        writes.push(`apply ${obj.kind}/${obj.metadata.name}`);
        return real.apply(obj, options);
      },
      delete: (id, policy) => {
        writes.push(`delete ${id.kind}/${id.name}`);
        return real.delete(id, policy);
      },
    };
  });
  afterAll(async () => {
    await sim.stop();
  });

  const namespace = (name: string): KubeObject => ({
    apiVersion: 'v1',
    kind: 'Namespace',
    metadata: { name },
  });
  const sync = (a: ReturnType<typeof assignment>, manifests: KubeObject[], inventory: ResourceId[] = []) =>
    syncTarget({ kube, health, assignment: a, manifests, inventory, trigger: 'auto', pollMs: 20 });

  it('prunes inside the Sync phase, the highest wave first, before PostSync hooks', async () => {
    const a = assignment('reverse');
    const first = await sync(a, [
      namespace('reverse'),
      configMap('db', wave(0)),
      configMap('api', wave(1)),
      configMap('web', wave(2)),
      configMap('stays', wave(0)),
    ]);
    expect(first.report.outcome).toBe('Succeeded');
    writes.splice(0);
    const second = await sync(
      a,
      [namespace('reverse'), configMap('stays', wave(0)), postSyncJob('smoke')],
      first.inventory,
    );
    expect(second.report.outcome).toBe('Succeeded');
    expect(writes.filter((w) => !w.startsWith('apply Namespace'))).toEqual([
      'apply ConfigMap/stays',
      'delete ConfigMap/web',
      'delete ConfigMap/api',
      'delete ConfigMap/db',
      // The hook's BeforeHookCreation: a previous run's Job goes first.
      'delete Job/smoke',
      'apply Job/smoke',
    ]);
    expect(second.inventory.map((i) => i.name).sort()).toEqual(['reverse', 'stays']);
  });

  it('PruneLast=true on an object prunes it after every wave is applied; the target option does it for all', async () => {
    const a = assignment('last');
    const first = await sync(a, [
      namespace('last'),
      configMap('early', wave(0, { 'argocd.argoproj.io/sync-options': 'PruneLast=true' })),
      configMap('plain', wave(0)),
    ]);
    writes.splice(0);
    await sync(a, [namespace('last'), configMap('late', wave(5))], first.inventory);
    expect(writes.filter((w) => !w.startsWith('apply Namespace'))).toEqual([
      'delete ConfigMap/plain',
      'apply ConfigMap/late',
      'delete ConfigMap/early',
    ]);

    const b = assignment('last-all', { pruneLast: true });
    const before = await sync(b, [
      namespace('last-all'),
      configMap('one', wave(0)),
      configMap('two', wave(1)),
    ]);
    writes.splice(0);
    await sync(b, [namespace('last-all'), configMap('late', wave(5))], before.inventory);
    expect(writes.filter((w) => !w.startsWith('apply Namespace'))).toEqual([
      'apply ConfigMap/late',
      'delete ConfigMap/two',
      'delete ConfigMap/one',
    ]);
  });

  it('a declared object failing in a later wave holds the prunes after it; they stay tracked', async () => {
    const a = assignment('held');
    const first = await sync(a, [
      namespace('held'),
      configMap('old-0', wave(0)),
      configMap('old-1', wave(1)),
      configMap('stays', wave(0)),
    ]);
    writes.splice(0);
    // A Deployment without containers: the API refuses it (422), in wave 1.
    const broken: KubeObject = {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name: 'broken', annotations: wave(1) },
      spec: {
        selector: { matchLabels: { app: 'b' } },
        template: { metadata: { labels: { app: 'b' } }, spec: { containers: [] } },
      },
    };
    const second = await sync(a, [namespace('held'), configMap('stays', wave(0)), broken], first.inventory);
    expect(second.report.outcome).toBe('Partial');
    // old-1 (wave 1) is pruned in wave 0's slot, before the failure; old-0 would go in wave 1's, after it.
    expect(second.report.resources.filter((r) => r.action === 'pruned').map((r) => r.name)).toEqual([
      'old-1',
    ]);
    expect(second.report.message).toContain(
      '1 declared object(s) failed; the rest not pruned this run (1 left in place)',
    );
    expect(
      await kube.get({ apiVersion: 'v1', kind: 'ConfigMap', namespace: 'held', name: 'old-0' }),
    ).toBeDefined();
    expect(second.inventory.map((i) => i.name).sort()).toEqual(['broken', 'held', 'old-0', 'stays']);
  });
});
