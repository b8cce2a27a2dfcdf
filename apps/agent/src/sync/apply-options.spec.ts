import { KubeConfig } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type KubeObject, assignmentSchema } from '@flotilla/contract';
import { type SimClusterHandle, startSimCluster } from '@flotilla/kube-sim';
import { type HealthAssessor } from '../health/target-health.js';
import { type KubeClient, createKubeClient } from '../kube/kube-client.js';
import { defaultHealthAssessor } from '../lib-adapters.js';
import { dryRunSync } from './dry-run-sync.js';
import { syncTarget } from './sync-target.js';

const namespace = (name: string): KubeObject => ({ apiVersion: 'v1', kind: 'Namespace', metadata: { name } });
const configMap = (name: string, data: Record<string, string>): KubeObject => ({
  apiVersion: 'v1',
  kind: 'ConfigMap',
  metadata: { name },
  data,
});

function assignment(name: string, ns: string, syncPolicy: Record<string, unknown>) {
  return assignmentSchema.parse({
    targetId: `t-${name}`,
    name,
    appSet: 'options',
    namespace: ns,
    revision: 'r1',
    bundleDigest: `sha256:${'0'.repeat(64)}`,
    syncPolicy: { prune: true, ...syncPolicy },
  });
}

/** The apply-shaping sync options against a simulated cluster (#14). */
describe('ApplyOutOfSyncOnly and FailOnSharedResource', () => {
  let sim: SimClusterHandle;
  let kube: KubeClient;
  let health: HealthAssessor;
  /** The objects each sync sent an apply for: the real client, counted. */
  const applied: string[] = [];
  beforeAll(async () => {
    health = await defaultHealthAssessor();
    sim = await startSimCluster({ name: 'apply-options' });
    const kc = new KubeConfig();
    kc.loadFromString(sim.kubeconfig());
    const real = createKubeClient(kc);
    kube = {
      ...real,
      apply: (obj, options) => {
        applied.push(`${obj.kind}/${obj.metadata.name}`);
        return real.apply(obj, options);
      },
    };
  });
  afterAll(async () => {
    await sim.stop();
  });

  const sync = (a: ReturnType<typeof assignment>, manifests: KubeObject[], inventory = [] as never[]) =>
    syncTarget({ kube, health, assignment: a, manifests, inventory, trigger: 'auto', pollMs: 50 });

  it('ApplyOutOfSyncOnly=true applies only what differs from what runs, and reports the rest unchanged', async () => {
    const bundle = [namespace('only-out'), configMap('kept', { a: '1' }), configMap('edited', { b: '1' })];
    const a = assignment('only-out', 'only-out', { applyOutOfSyncOnly: true });
    const first = await sync(a, bundle);
    expect(first.report.outcome).toBe('Succeeded');
    expect(applied.splice(0).sort()).toEqual(['ConfigMap/edited', 'ConfigMap/kept', 'Namespace/only-out']);

    // Someone changes one object by hand; the next sync re-applies that one alone.
    await kube.apply(
      { ...configMap('edited', { b: 'by hand' }), metadata: { name: 'edited', namespace: 'only-out' } },
      { fieldManager: 'kubectl-edit' },
    );
    applied.splice(0);
    const second = await sync(a, bundle, first.inventory as never[]);
    expect(second.report.outcome).toBe('Succeeded');
    expect(applied.splice(0)).toEqual(['ConfigMap/edited']);
    expect(second.report.resources.map((r) => [r.name, r.action, r.message]).sort()).toEqual([
      ['edited', 'applied', ''],
      ['kept', 'unchanged', 'in sync: not applied (ApplyOutOfSyncOnly=true)'],
      ['only-out', 'unchanged', 'in sync: not applied (ApplyOutOfSyncOnly=true)'],
    ]);
    const healed = await kube.get({
      apiVersion: 'v1',
      kind: 'ConfigMap',
      namespace: 'only-out',
      name: 'edited',
    });
    expect(healed?.['data']).toEqual({ b: '1' });

    // Without the option every declared object is applied again.
    const without = assignment('only-out', 'only-out', {});
    await sync(without, bundle, second.inventory as never[]);
    expect(applied.splice(0).sort()).toEqual(['ConfigMap/edited', 'ConfigMap/kept', 'Namespace/only-out']);
  });

  it('FailOnSharedResource=true fails a sync that declares another target\u2019s object, before applying anything', async () => {
    const owner = assignment('owner', 'shared', {});
    const first = await sync(owner, [namespace('shared'), configMap('common', { who: 'owner' })]);
    expect(first.report.outcome).toBe('Succeeded');
    applied.splice(0);

    const strict = assignment('strict', 'shared', { failOnSharedResource: true });
    const refused = await sync(strict, [
      configMap('mine', { who: 'strict' }),
      configMap('common', { who: 'strict' }),
    ]);
    expect(refused.report.outcome).toBe('Failed');
    expect(refused.report.message).toContain(
      '1 object(s) tracked by another target (FailOnSharedResource=true); nothing applied',
    );
    expect(refused.report.resources).toEqual([
      {
        group: '',
        kind: 'ConfigMap',
        namespace: 'shared',
        name: 'common',
        action: 'failed',
        message: 'already tracked by target owner (FailOnSharedResource=true)',
      },
    ]);
    expect(applied).toEqual([]);
    // A dry run says the same, and applies nothing either.
    const preview = await dryRunSync({
      kube,
      assignment: strict,
      manifests: [configMap('mine', { who: 'strict' }), configMap('common', { who: 'strict' })],
      inventory: [],
      prune: false,
    });
    expect(preview.outcome).toBe('Failed');
    expect(preview.message).toContain(
      'tracked by another target (FailOnSharedResource=true); a sync would apply nothing',
    );
    expect(preview.resources.map((r) => r.name)).toEqual(['common']);
    expect(applied).toEqual([]);
    expect(
      await kube.get({ apiVersion: 'v1', kind: 'ConfigMap', namespace: 'shared', name: 'mine' }),
    ).toBeUndefined();
    const common = await kube.get({
      apiVersion: 'v1',
      kind: 'ConfigMap',
      namespace: 'shared',
      name: 'common',
    });
    expect(common?.['data']).toEqual({ who: 'owner' });

    // Without the option the object is taken over, and the run says from which target.
    const lax = assignment('lax', 'shared', {});
    const taken = await sync(lax, [configMap('common', { who: 'lax' })]);
    expect(taken.report.outcome).toBe('Succeeded');
    expect(taken.report.resources[0]?.message).toBe('taken over from target owner, which tracked it');
  });
});
