import { KubeConfig } from '@kubernetes/client-node';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { type KubeObject, assignmentSchema, kubeObjectSchema } from '@flotilla/contract';
import { type SimClusterHandle, startSimCluster } from '@flotilla/kube-sim';
import { type HealthAssessor } from '../health/target-health.js';
import { type KubeClient, createKubeClient } from '../kube/kube-client.js';
import { defaultHealthAssessor } from '../lib-adapters.js';
import { type ResourceId } from '../state/state-store.js';
import { type SyncInput, type SyncResult, syncTarget } from './sync-target.js';

const ns: KubeObject = { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'gen' } };
const settings: KubeObject = {
  apiVersion: 'v1',
  kind: 'ConfigMap',
  metadata: { name: 'settings' },
  data: { k: 'v' },
};

/** A Job hook named by generateName only, read through the contract as an agent reads a bundle. */
function generatedJob(
  prefix: string,
  annotations: Record<string, string>,
  image = 'busybox:1.36',
): KubeObject {
  return kubeObjectSchema.parse({
    apiVersion: 'batch/v1',
    kind: 'Job',
    metadata: { generateName: prefix, annotations },
    spec: {
      backoffLimit: 0,
      template: { spec: { restartPolicy: 'Never', containers: [{ name: 'main', image }] } },
    },
  });
}

const GENERATED = /^migrate-[bcdfghjklmnpqrstvwxz2456789]{5}$/;

describe('hooks named by generateName against a simulated cluster', () => {
  let sim: SimClusterHandle;
  let kube: KubeClient;
  let health: HealthAssessor;
  const jobId = (name: string): ResourceId => ({
    apiVersion: 'batch/v1',
    kind: 'Job',
    namespace: 'gen',
    name,
  });
  const sync = (manifests: KubeObject[], over: Partial<SyncInput> = {}): Promise<SyncResult> =>
    syncTarget({
      kube,
      health,
      assignment: assignmentSchema.parse({
        targetId: 't-gen',
        name: 'gen',
        appSet: 'gen',
        namespace: 'gen',
        revision: 'r1',
        bundleDigest: `sha256:${'2'.repeat(64)}`,
        syncPolicy: {},
      }),
      manifests,
      inventory: [],
      trigger: 'auto',
      pollMs: 25,
      waitTimeoutMs: 15_000,
      ...over,
    });
  const hookResults = (r: SyncResult): { phase: string; name: string; action: string; message: string }[] =>
    r.report.resources
      .filter((x) => x.hookPhase)
      .map((x) => ({ phase: x.hookPhase ?? '', name: x.name, action: x.action, message: x.message ?? '' }));

  beforeAll(async () => {
    health = await defaultHealthAssessor();
    sim = await startSimCluster({ name: 'generated-hooks' });
    const kc = new KubeConfig();
    kc.loadFromString(sim.kubeconfig());
    kube = createKubeClient(kc);
  });
  afterAll(async () => {
    await sim.stop();
  });
  beforeEach(async () => {
    if (await kube.delete({ apiVersion: 'v1', kind: 'Namespace', name: 'gen' }))
      await expect
        .poll(() => kube.get({ apiVersion: 'v1', kind: 'Namespace', name: 'gen' }), { timeout: 15_000 })
        .toBeUndefined();
  });

  it('creates a fresh object every run; BeforeHookCreation (the default) deletes the earlier runs’ objects', async () => {
    const manifests = [ns, settings, generatedJob('migrate-', { 'argocd.argoproj.io/hook': 'PreSync' })];
    const first = await sync(manifests);
    expect(first.report.outcome).toBe('Succeeded');
    const [run1] = hookResults(first);
    expect(run1).toMatchObject({ phase: 'PreSync', action: 'applied' });
    expect(run1?.name).toMatch(GENERATED);
    const created = await kube.get(jobId(run1?.name ?? ''));
    expect(created?.metadata.generateName).toBe('migrate-');
    expect(created?.metadata.annotations?.['flotilla.dev/tracking-id']).toBe('gen');
    // A hook is never tracked for prune, whatever its name.
    expect(first.inventory.map((i) => `${i.kind}/${i.name}`)).toEqual([
      'Namespace/gen',
      'ConfigMap/settings',
    ]);

    const second = await sync(manifests);
    expect(second.report.outcome).toBe('Succeeded');
    const [run2] = hookResults(second);
    expect(run2?.name).toMatch(GENERATED);
    expect(run2?.name).not.toBe(run1?.name);
    expect(run2?.message).toContain(`deleted the earlier run's ${run1?.name ?? ''} (BeforeHookCreation)`);
    expect(await kube.get(jobId(run1?.name ?? ''))).toBeUndefined();
    expect(await kube.get(jobId(run2?.name ?? ''))).toBeDefined();
  });

  it('applies HookSucceeded and HookFailed to the object actually created', async () => {
    const ok = await sync([
      ns,
      generatedJob('migrate-', {
        'argocd.argoproj.io/hook': 'PreSync',
        'argocd.argoproj.io/hook-delete-policy': 'HookSucceeded',
      }),
    ]);
    expect(ok.report.outcome).toBe('Succeeded');
    const [done] = hookResults(ok);
    expect(done?.name).toMatch(GENERATED);
    expect(done?.message).toContain('deleted (HookSucceeded)');
    expect(await kube.get(jobId(done?.name ?? ''))).toBeUndefined();

    const bad = await sync([
      ns,
      generatedJob(
        'migrate-',
        { 'argocd.argoproj.io/hook': 'PreSync', 'argocd.argoproj.io/hook-delete-policy': 'HookFailed' },
        'busybox:1.36-fail',
      ),
    ]);
    expect(bad.report.outcome).toBe('Failed');
    const [failed] = hookResults(bad);
    expect(failed).toMatchObject({ phase: 'PreSync', action: 'failed' });
    expect(failed?.message).toContain('deleted (HookFailed)');
    expect(bad.report.message).toContain(`batch/Job gen/${failed?.name ?? ''}`);
    expect(await kube.get(jobId(failed?.name ?? ''))).toBeUndefined();
  });

  it('keeps a finished object without BeforeHookCreation: each run adds its own', async () => {
    const manifests = [
      ns,
      generatedJob('migrate-', {
        'argocd.argoproj.io/hook': 'PostSync',
        'argocd.argoproj.io/hook-delete-policy': 'HookFailed',
      }),
    ];
    const names = [];
    for (let i = 0; i < 2; i++) {
      const r = await sync(manifests);
      expect(r.report.outcome).toBe('Succeeded');
      names.push(hookResults(r)[0]?.name ?? '');
    }
    for (const name of names) expect(await kube.get(jobId(name))).toBeDefined();
  });

  it('refuses generateName on an object that is not a hook, naming the field, applying nothing', async () => {
    const plain = kubeObjectSchema.parse({
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { generateName: 'settings-' },
      data: {},
    });
    const r = await sync([ns, plain]);
    expect(r.report.outcome).toBe('Failed');
    expect(r.report.message).toBe(
      'ConfigMap settings- metadata.generateName: only a hook may be named by generateName (its name is made fresh on every run); give this object a metadata.name',
    );
    expect(r.report.resources).toEqual([]);
    expect(await kube.get({ apiVersion: 'v1', kind: 'Namespace', name: 'gen' })).toBeUndefined();
  });
});
