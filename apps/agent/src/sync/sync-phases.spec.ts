import { KubeConfig } from '@kubernetes/client-node';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { type Assignment, type KubeObject, assignmentSchema } from '@flotilla/contract';
import { type SimClusterHandle, startSimCluster } from '@flotilla/kube-sim';
import { type HealthAssessor } from '../health/target-health.js';
import { type KubeClient, createKubeClient } from '../kube/kube-client.js';
import { defaultHealthAssessor } from '../lib-adapters.js';
import { type ResourceId } from '../state/state-store.js';
import { type SyncInput, type SyncResult, syncTarget } from './sync-target.js';

const ns: KubeObject = { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'jobs' } };

function configMap(name: string, annotations: Record<string, string> = {}): KubeObject {
  return { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, annotations }, data: { k: name } };
}

/** A Job that runs to completion in the simulator, or fails when `image` ends in `-fail`. */
function job(name: string, annotations: Record<string, string>, image = 'busybox:1.36'): KubeObject {
  return {
    apiVersion: 'batch/v1',
    kind: 'Job',
    metadata: { name, annotations },
    spec: {
      backoffLimit: 0,
      template: { spec: { restartPolicy: 'Never', containers: [{ name: 'main', image }] } },
    },
  };
}

function pod(name: string, image: string): KubeObject {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name },
    spec: { containers: [{ name: 'main', image }] },
  };
}

function deployment(name: string, image: string, annotations: Record<string, string> = {}): KubeObject {
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name, annotations },
    spec: {
      replicas: 2,
      selector: { matchLabels: { app: name } },
      template: { metadata: { labels: { app: name } }, spec: { containers: [{ name: 'main', image }] } },
    },
  };
}

function assignment(over: Record<string, unknown> = {}): Assignment {
  return assignmentSchema.parse({
    targetId: 't-jobs',
    name: 'jobs',
    appSet: 'jobs',
    namespace: 'jobs',
    revision: 'r1',
    bundleDigest: `sha256:${'1'.repeat(64)}`,
    syncPolicy: {},
    ...over,
  });
}

const line = (r: SyncResult): string[] =>
  r.report.resources.map((x) => `${x.hookPhase ?? '-'} ${x.kind}/${x.name}:${x.action}`);

describe('sync phases, hooks and waves against a simulated cluster', () => {
  let sim: SimClusterHandle;
  let kube: KubeClient;
  let health: HealthAssessor;
  const id = (kind: string, name: string): ResourceId => ({
    apiVersion: kind === 'Job' ? 'batch/v1' : kind === 'Deployment' ? 'apps/v1' : 'v1',
    kind,
    namespace: 'jobs',
    name,
  });
  const sync = (manifests: KubeObject[], over: Partial<SyncInput> = {}): Promise<SyncResult> =>
    syncTarget({
      kube,
      health,
      assignment: assignment(),
      manifests,
      inventory: [],
      trigger: 'auto',
      pollMs: 25,
      waitTimeoutMs: 15_000,
      ...over,
    });

  beforeAll(async () => {
    health = await defaultHealthAssessor();
    sim = await startSimCluster({ name: 'phases' });
    const kc = new KubeConfig();
    kc.loadFromString(sim.kubeconfig());
    kube = createKubeClient(kc);
  });
  afterAll(async () => {
    await sim.stop();
  });
  beforeEach(async () => {
    // Each case starts from an empty namespace (deleting it takes its objects along).
    if (await kube.delete({ apiVersion: 'v1', kind: 'Namespace', name: 'jobs' }))
      await expect
        .poll(() => kube.get({ apiVersion: 'v1', kind: 'Namespace', name: 'jobs' }), { timeout: 15_000 })
        .toBeUndefined();
  });

  it('runs PreSync, then the objects, then PostSync; SyncFail does not run; delete policies apply', async () => {
    const manifests = [
      ns,
      job('smoke', { 'argocd.argoproj.io/hook': 'PostSync' }),
      configMap('settings'),
      job('migrate', {
        'argocd.argoproj.io/hook': 'PreSync',
        'argocd.argoproj.io/hook-delete-policy': 'HookSucceeded',
      }),
      job('notify', { 'flotilla.dev/hook': 'SyncFail' }),
      configMap('skipped', { 'argocd.argoproj.io/hook': 'Skip' }),
    ];
    const first = await sync(manifests);
    expect(first.report.outcome).toBe('Succeeded');
    expect(line(first)).toEqual([
      '- Namespace/jobs:applied',
      'PreSync Job/migrate:applied',
      '- ConfigMap/settings:applied',
      'PostSync Job/smoke:applied',
    ]);
    expect(first.report.resources.find((x) => x.name === 'migrate')?.message).toContain(
      'deleted (HookSucceeded)',
    );
    // Hooks and Skip objects are neither tracked for prune nor watched for drift.
    expect(first.inventory.map((i) => `${i.kind}/${i.name}`)).toEqual([
      'Namespace/jobs',
      'ConfigMap/settings',
    ]);
    expect(await kube.get(id('Job', 'migrate'))).toBeUndefined();
    expect(await kube.get(id('Job', 'notify'))).toBeUndefined();
    expect(await kube.get(id('ConfigMap', 'skipped'))).toBeUndefined();
    const smoke = await kube.get(id('Job', 'smoke'));
    const settings = await kube.get(id('ConfigMap', 'settings'));
    // PostSync ran after the objects were applied.
    expect(
      String(smoke?.metadata['creationTimestamp']) >= String(settings?.metadata['creationTimestamp']),
    ).toBe(true);

    // BeforeHookCreation (the default): the next sync replaces the finished PostSync Job with a new one.
    const second = await sync(manifests);
    expect(second.report.outcome).toBe('Succeeded');
    expect((await kube.get(id('Job', 'smoke')))?.metadata['uid']).not.toBe(smoke?.metadata['uid']);
  });

  it('a failing PreSync hook stops the sync before any object, runs SyncFail, and HookFailed deletes it', async () => {
    const r = await sync([
      ns,
      configMap('settings'),
      job(
        'migrate',
        {
          'argocd.argoproj.io/hook': 'PreSync',
          'argocd.argoproj.io/hook-delete-policy': 'HookFailed',
        },
        'busybox:1.36-fail',
      ),
      job('smoke', { 'argocd.argoproj.io/hook': 'PostSync' }),
      job('notify', { 'argocd.argoproj.io/hook': 'SyncFail' }),
    ]);
    expect(r.report.outcome).toBe('Failed');
    expect(line(r)).toEqual([
      '- Namespace/jobs:applied',
      'PreSync Job/migrate:failed',
      'SyncFail Job/notify:applied',
    ]);
    expect(r.report.message).toMatch(/^PreSync hook failed: batch\/Job jobs\/migrate: .*backoff limit/);
    expect(r.report.resources.find((x) => x.name === 'migrate')?.message).toContain('deleted (HookFailed)');
    expect(await kube.get(id('Job', 'migrate'))).toBeUndefined();
    expect(await kube.get(id('ConfigMap', 'settings'))).toBeUndefined();
    expect(await kube.get(id('Job', 'smoke'))).toBeUndefined();
  });

  it('runs a bare Pod as a hook: Succeeded passes, Failed fails the sync', async () => {
    const pod = (name: string, image: string, phase: string): KubeObject => ({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name, annotations: { 'flotilla.dev/hook': phase } },
      spec: { restartPolicy: 'Never', containers: [{ name: 'main', image }] },
    });
    const ok = await sync([ns, configMap('settings'), pod('check', 'busybox:1.36', 'PostSync')]);
    expect(ok.report.outcome).toBe('Succeeded');
    expect(line(ok)).toEqual([
      '- Namespace/jobs:applied',
      '- ConfigMap/settings:applied',
      'PostSync Pod/check:applied',
    ]);
    const bad = await sync([ns, configMap('settings'), pod('check', 'busybox:1.36-fail', 'Sync')]);
    expect(bad.report.outcome).toBe('Failed');
    expect(line(bad)).toEqual([
      '- Namespace/jobs:unchanged',
      '- ConfigMap/settings:unchanged',
      'Sync Pod/check:failed',
    ]);
    expect(bad.report.message).toMatch(/^Sync hook failed: Pod jobs\/check: /);
  });

  it('runs no hooks on a rollback or a self-heal', async () => {
    const manifests = [
      ns,
      configMap('settings'),
      job('migrate', { 'argocd.argoproj.io/hook': 'PreSync' }),
      job('smoke', { 'argocd.argoproj.io/hook': 'PostSync' }),
    ];
    const rollback = await sync(manifests, { trigger: 'rollback' });
    expect(line(rollback)).toEqual(['- Namespace/jobs:applied', '- ConfigMap/settings:applied']);
    const heal = await sync(manifests, { trigger: 'self-heal', only: new Set(['/ConfigMap/jobs/settings']) });
    expect(line(heal)).toEqual(['- ConfigMap/settings:unchanged']);
    expect(await kube.get(id('Job', 'migrate'))).toBeUndefined();
    expect(await kube.get(id('Job', 'smoke'))).toBeUndefined();
  });

  it('refuses a revision with an unknown hook or delete policy, naming the annotation, applying nothing', async () => {
    const r = await sync([
      ns,
      job('migrate', {
        'argocd.argoproj.io/hook': 'PreSync',
        'argocd.argoproj.io/hook-delete-policy': 'Always',
      }),
    ]);
    expect(r.report.outcome).toBe('Failed');
    expect(r.report.message).toBe(
      'Job migrate metadata.annotations["argocd.argoproj.io/hook-delete-policy"]: unknown hook delete policy "Always": expected HookSucceeded, HookFailed, BeforeHookCreation',
    );
    expect(r.report.resources).toEqual([]);
    expect(await kube.get({ apiVersion: 'v1', kind: 'Namespace', name: 'jobs' })).toBeUndefined();
  });

  it('starts a wave only once the previous one is healthy', async () => {
    // The cluster's own write log tells what the Deployment looked like when the wave-1 ConfigMap was created.
    let apiAtConfigMap: unknown = 'never created';
    let lastApi: Record<string, unknown> | undefined;
    const unsubscribe = sim.api.store.subscribe((e) => {
      if (e.resource === 'apps/deployments' && e.name === 'api') lastApi = e.object;
      if (e.resource === '/configmaps' && e.name === 'after-api' && e.type === 'ADDED')
        apiAtConfigMap = structuredClone(lastApi?.['status']);
    });
    try {
      const r = await sync([
        ns,
        deployment('api', 'nginx:1.27', { 'argocd.argoproj.io/sync-wave': '0' }),
        configMap('after-api', { 'argocd.argoproj.io/sync-wave': '1' }),
      ]);
      expect(r.report.outcome).toBe('Succeeded');
    } finally {
      unsubscribe();
    }
    expect(apiAtConfigMap).toMatchObject({ replicas: 2, updatedReplicas: 2, availableReplicas: 2 });
  });

  it("fails a wave at once when an object is Degraded (a Deployment past its own progress deadline), not after the agent's timeout", async () => {
    const stuck = deployment('late', 'nginx:1.27-unready');
    (stuck['spec'] as Record<string, unknown>)['progressDeadlineSeconds'] = 1;
    const startedAt = Date.now();
    const r = await sync([ns, stuck, configMap('later', { 'argocd.argoproj.io/sync-wave': '2' })], {
      waitTimeoutMs: 120_000,
    });
    expect(r.report.outcome).toBe('Failed');
    expect(r.report.message).toMatch(
      /^wave 0 failed: apps\/Deployment jobs\/late Degraded \(Deployment "late" exceeded its progress deadline\)/,
    );
    expect(Date.now() - startedAt).toBeLessThan(60_000);
    expect(await kube.get(id('ConfigMap', 'later'))).toBeUndefined();
  });

  it('fails with a clear message when a wave is not healthy in time, applying no later wave', async () => {
    const r = await sync(
      [
        ns,
        pod('stuck', 'nginx:1.27-unready'),
        configMap('later', { 'argocd.argoproj.io/sync-wave': '2' }),
        job('notify', { 'argocd.argoproj.io/hook': 'SyncFail' }),
      ],
      { waitTimeoutMs: 1_000 },
    );
    expect(r.report.outcome).toBe('Failed');
    expect(r.report.message).toMatch(/^wave 0 not healthy after 1 s: Pod jobs\/stuck Progressing/);
    expect(line(r)).toEqual([
      '- Namespace/jobs:applied',
      '- Pod/stuck:applied',
      'SyncFail Job/notify:applied',
    ]);
    expect(await kube.get(id('ConfigMap', 'later'))).toBeUndefined();
  });

  it('terminated while a wave waits for health: stops there, reports Terminated with what it applied, runs nothing more', async () => {
    const terminate = new AbortController();
    // Terminate the moment the wave's Pod exists: the run is then waiting for it to be healthy.
    const unsubscribe = sim.api.store.subscribe((e) => {
      if (e.resource === '/pods' && e.name === 'stuck' && e.type === 'ADDED')
        terminate.abort('terminated by alice: wrong change window');
    });
    const r = await (async () => {
      try {
        return await sync(
          [
            ns,
            pod('stuck', 'nginx:1.27-unready'),
            configMap('later', { 'argocd.argoproj.io/sync-wave': '2' }),
            job('notify', { 'argocd.argoproj.io/hook': 'SyncFail' }),
            job('smoke', { 'argocd.argoproj.io/hook': 'PostSync' }),
          ],
          { waitTimeoutMs: 600_000, terminate: terminate.signal },
        );
      } finally {
        unsubscribe();
      }
    })();
    expect(r.report.outcome).toBe('Terminated');
    expect(r.interrupted).toBe(false);
    expect(r.report.message).toMatch(/^terminated by alice: wrong change window/);
    // What was applied is in the report; no later wave, no PostSync, no SyncFail hook.
    expect(line(r)).toEqual(['- Namespace/jobs:applied', '- Pod/stuck:applied']);
    expect(await kube.get(id('ConfigMap', 'later'))).toBeUndefined();
    expect(await kube.get(id('Job', 'notify'))).toBeUndefined();
    expect(await kube.get(id('Job', 'smoke'))).toBeUndefined();
    // What it applied is tracked; the rest is not.
    expect(r.inventory.map((x) => `${x.kind}/${x.name}`)).toEqual(['Namespace/jobs', 'Pod/stuck']);
  });

  it('terminated before it reached an object: applies nothing, prunes nothing', async () => {
    const first = await sync([ns, configMap('old')]);
    expect(first.report.outcome).toBe('Succeeded');
    const terminate = new AbortController();
    terminate.abort('terminated by bob: not now');
    const r = await sync([ns, configMap('new')], {
      inventory: first.inventory,
      assignment: assignment({ syncPolicy: { prune: true } }),
      terminate: terminate.signal,
    });
    expect(r.report.outcome).toBe('Terminated');
    expect(r.report.resources).toEqual([]);
    expect(await kube.get(id('ConfigMap', 'new'))).toBeUndefined();
    expect(await kube.get(id('ConfigMap', 'old'))).toBeDefined();
    // Still tracked: a later sync prunes it as usual.
    expect(r.inventory.map((x) => `${x.kind}/${x.name}`)).toEqual(
      expect.arrayContaining(['Namespace/jobs', 'ConfigMap/old']),
    );
  });
});
