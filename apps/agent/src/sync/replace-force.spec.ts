import { KubeConfig } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type KubeObject, assignmentSchema } from '@flotilla/contract';
import { type SimClusterHandle, startSimCluster } from '@flotilla/kube-sim';
import { type HealthAssessor } from '../health/target-health.js';
import { KubeApiError, type KubeClient, createKubeClient } from '../kube/kube-client.js';
import { defaultHealthAssessor } from '../lib-adapters.js';
import { type ResourceId } from '../state/state-store.js';
import { dryRunSync } from './dry-run-sync.js';
import { syncTarget } from './sync-target.js';

const OPTIONS = 'argocd.argoproj.io/sync-options';

const namespace = (name: string): KubeObject => ({ apiVersion: 'v1', kind: 'Namespace', metadata: { name } });
const configMap = (name: string, data: Record<string, string>, options?: string): KubeObject => ({
  apiVersion: 'v1',
  kind: 'ConfigMap',
  metadata: { name, ...(options ? { annotations: { [OPTIONS]: options } } : {}) },
  data,
});
const job = (name: string, image: string, options?: string): KubeObject => ({
  apiVersion: 'batch/v1',
  kind: 'Job',
  metadata: { name, ...(options ? { annotations: { [OPTIONS]: options } } : {}) },
  spec: {
    template: {
      spec: { restartPolicy: 'Never', containers: [{ name: 'migrate', image }] },
    },
  },
});

function assignment(name: string, syncPolicy: Record<string, unknown> = {}) {
  return assignmentSchema.parse({
    targetId: `t-${name}`,
    name,
    appSet: 'replace-force',
    namespace: name,
    revision: 'r1',
    bundleDigest: `sha256:${'0'.repeat(64)}`,
    syncPolicy: { prune: true, ...syncPolicy },
  });
}

/** Argo CD's Replace=true and Force=true against a simulated cluster, with the real client (#14). */
describe('Replace and Force', () => {
  let sim: SimClusterHandle;
  let real: KubeClient;
  let health: HealthAssessor;
  beforeAll(async () => {
    health = await defaultHealthAssessor();
    sim = await startSimCluster({ name: 'replace-force' });
    const kc = new KubeConfig();
    kc.loadFromString(sim.kubeconfig());
    real = createKubeClient(kc);
  });
  afterAll(async () => {
    await sim.stop();
  });

  const sync = (
    a: ReturnType<typeof assignment>,
    manifests: KubeObject[],
    inventory: ResourceId[] = [],
    kube: KubeClient = real,
  ) => syncTarget({ kube, health, assignment: a, manifests, inventory, trigger: 'auto', pollMs: 20 });
  const uidOf = async (kind: string, apiVersion: string, ns: string, name: string) =>
    (await real.get({ apiVersion, kind, namespace: ns, name }))?.metadata.uid;
  const resultOf = (r: Awaited<ReturnType<typeof sync>>, name: string) =>
    r.report.resources.find((x) => x.name === name);

  it('Replace=true writes the object whole: what another manager added is gone, a missing one is created', async () => {
    const a = assignment('replace-cm');
    const bundle = [
      namespace('replace-cm'),
      configMap('whole', { a: '1' }, 'Replace=true'),
      configMap('applied', { a: '1' }),
    ];
    const first = await sync(a, bundle);
    expect(first.report.outcome).toBe('Succeeded');
    expect(resultOf(first, 'whole')).toMatchObject({ action: 'applied', message: 'replaced (Replace=true)' });

    // Another tool adds a key to both; server-side apply leaves its key, a replace removes it.
    for (const name of ['whole', 'applied'])
      await real.apply(
        {
          apiVersion: 'v1',
          kind: 'ConfigMap',
          metadata: { name, namespace: 'replace-cm' },
          data: { extra: 'x' },
        },
        { fieldManager: 'someone-else' },
      );
    const second = await sync(a, bundle, first.inventory);
    expect(second.report.outcome).toBe('Succeeded');
    expect(resultOf(second, 'whole')).toMatchObject({
      action: 'applied',
      message: 'replaced (Replace=true)',
    });
    const cm = (name: string) =>
      real.get({ apiVersion: 'v1', kind: 'ConfigMap', namespace: 'replace-cm', name });
    expect((await cm('whole'))?.data).toEqual({ a: '1' });
    expect((await cm('applied'))?.data).toEqual({ a: '1', extra: 'x' });
    // Still tracked as this target's: the annotation and label travel in the replaced object.
    expect((await cm('whole'))?.metadata.annotations?.['flotilla.dev/tracking-id']).toBe('replace-cm');

    // Nothing changed since: the replace stores nothing and says so.
    const third = await sync(a, bundle, second.inventory);
    expect(resultOf(third, 'whole')).toMatchObject({ action: 'unchanged', message: '' });
  });

  it('without Force, a changed Job template fails the object; Force=true re-creates the Job', async () => {
    const a = assignment('force-job');
    const first = await sync(a, [namespace('force-job'), job('migrate', 'migrate:1')]);
    expect(first.report.outcome).toBe('Succeeded');
    const uid = await uidOf('Job', 'batch/v1', 'force-job', 'migrate');

    const refused = await sync(a, [namespace('force-job'), job('migrate', 'migrate:2')], first.inventory);
    expect(resultOf(refused, 'migrate')).toMatchObject({ action: 'failed' });
    expect(resultOf(refused, 'migrate')?.message).toMatch(/field is immutable/);
    expect(await uidOf('Job', 'batch/v1', 'force-job', 'migrate')).toBe(uid);

    const forced = await sync(
      a,
      [namespace('force-job'), job('migrate', 'migrate:2', 'Force=true')],
      first.inventory,
    );
    expect(forced.report.outcome).toBe('Succeeded');
    expect(resultOf(forced, 'migrate')?.action).toBe('applied');
    expect(resultOf(forced, 'migrate')?.message).toMatch(
      /^re-created \(Force=true\) after the API refused the change: .*field is immutable/,
    );
    const live = await real.get({
      apiVersion: 'batch/v1',
      kind: 'Job',
      namespace: 'force-job',
      name: 'migrate',
    });
    expect(live?.metadata.uid).not.toBe(uid);
    const containers = (live?.['spec'] as { template: { spec: { containers: { image: string }[] } } })
      .template.spec.containers;
    expect(containers[0]?.image).toBe('migrate:2');

    // The same revision again: the apply is accepted, nothing is re-created.
    const again = await sync(
      a,
      [namespace('force-job'), job('migrate', 'migrate:2', 'Force=true')],
      forced.inventory,
    );
    expect(resultOf(again, 'migrate')).toMatchObject({ action: 'unchanged', message: '' });
    expect(await uidOf('Job', 'batch/v1', 'force-job', 'migrate')).toBe(live?.metadata.uid);
  });

  it('Force=true never deletes an object for an error that is not the API refusing the change', async () => {
    const a = assignment('force-outage');
    const first = await sync(a, [namespace('force-outage'), job('migrate', 'migrate:1', 'Force=true')]);
    const uid = await uidOf('Job', 'batch/v1', 'force-outage', 'migrate');
    const flaky: KubeClient = {
      ...real,
      apply: (obj, options) =>
        obj.kind === 'Job'
          ? Promise.reject(new KubeApiError(503, 'ServiceUnavailable', 'the server is shutting down', 'jobs'))
          : real.apply(obj, options),
    };
    const r = await sync(
      a,
      [namespace('force-outage'), job('migrate', 'migrate:2', 'Force=true')],
      first.inventory,
      flaky,
    );
    expect(resultOf(r, 'migrate')).toMatchObject({
      action: 'failed',
      message: 'the server is shutting down',
    });
    expect(await uidOf('Job', 'batch/v1', 'force-outage', 'migrate')).toBe(uid);
  });

  it("the target's Replace=true with Force=true re-creates every object on every sync", async () => {
    const a = assignment('recreate', { replace: true, force: true });
    const bundle = [job('seed', 'seed:1')];
    await real.apply(namespace('recreate'));
    const first = await sync(a, bundle);
    expect(resultOf(first, 'seed')).toMatchObject({ action: 'applied', message: '' });
    const uid = await uidOf('Job', 'batch/v1', 'recreate', 'seed');
    const second = await sync(a, bundle, first.inventory);
    expect(resultOf(second, 'seed')).toMatchObject({
      action: 'applied',
      message: 're-created (Replace=true, Force=true)',
    });
    expect(await uidOf('Job', 'batch/v1', 'recreate', 'seed')).not.toBe(uid);
    // An object's own Replace=false wins over the target's choice: applied, not re-created.
    const own = [job('seed', 'seed:1', 'Replace=false')];
    const uid2 = await uidOf('Job', 'batch/v1', 'recreate', 'seed');
    const third = await sync(a, own, second.inventory);
    expect(resultOf(third, 'seed')?.message).toBe('');
    expect(await uidOf('Job', 'batch/v1', 'recreate', 'seed')).toBe(uid2);
  });

  it('a dry run says what Replace and Force would do, and changes nothing', async () => {
    const a = assignment('force-dry');
    const first = await sync(a, [
      namespace('force-dry'),
      job('migrate', 'migrate:1'),
      configMap('whole', { a: '1' }),
    ]);
    const uid = await uidOf('Job', 'batch/v1', 'force-dry', 'migrate');
    const report = await dryRunSync({
      kube: real,
      assignment: a,
      manifests: [
        namespace('force-dry'),
        job('migrate', 'migrate:2', 'Force=true'),
        configMap('whole', { a: '2' }, 'Replace=true'),
      ],
      inventory: first.inventory,
      prune: false,
    });
    const byName = new Map(report.resources.map((r) => [r.name, r]));
    expect(byName.get('migrate')?.message).toMatch(
      /^would be re-created \(Force=true\) after the API refused the change: .*field is immutable/,
    );
    expect(byName.get('whole')).toMatchObject({
      action: 'applied',
      message: 'would be replaced (Replace=true)',
    });
    expect(await uidOf('Job', 'batch/v1', 'force-dry', 'migrate')).toBe(uid);
    expect(
      (await real.get({ apiVersion: 'v1', kind: 'ConfigMap', namespace: 'force-dry', name: 'whole' }))?.data,
    ).toEqual({
      a: '1',
    });
  });
});
