import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { KubeConfig } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type KubeObject,
  TRACKING_ANNOTATION,
  TRACKING_LABEL,
  type TargetDeletion,
  assignmentSchema,
} from '@flotilla/contract';
import { type SimClusterHandle, startSimCluster } from '@flotilla/kube-sim';
import { type HealthAssessor } from '../health/target-health.js';
import { type KubeClient, createKubeClient } from '../kube/kube-client.js';
import { defaultHealthAssessor } from '../lib-adapters.js';
import { type ResourceId, StateStore } from '../state/state-store.js';
import { pollOptions as poll } from '../testing/agent-harness.js';
import { type DeleteTargetResult, deleteTarget } from './delete-target.js';
import { syncTarget } from './sync-target.js';

const DIGEST = `sha256:${'d'.repeat(64)}`;

function namespace(name: string, annotations: Record<string, string> = {}): KubeObject {
  return { apiVersion: 'v1', kind: 'Namespace', metadata: { name, annotations } };
}

function configMap(name: string, annotations: Record<string, string> = {}, extra = {}): KubeObject {
  return {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name, annotations, ...extra },
    data: { k: name },
  };
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

const deployment: KubeObject = {
  apiVersion: 'apps/v1',
  kind: 'Deployment',
  metadata: { name: 'web', annotations: { 'argocd.argoproj.io/sync-wave': '1' } },
  spec: {
    replicas: 1,
    selector: { matchLabels: { app: 'web' } },
    template: {
      metadata: { labels: { app: 'web' } },
      spec: { containers: [{ name: 'web', image: 'nginx' }] },
    },
  },
};

const pvc: KubeObject = {
  apiVersion: 'v1',
  kind: 'PersistentVolumeClaim',
  metadata: { name: 'data', annotations: { 'helm.sh/resource-policy': 'keep' } },
  spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } } },
};

/**
 * A target's deletion against a simulated cluster with the real client: what stays, what goes, in
 * which order, and what a failing or interrupted deletion leaves behind (#14).
 */
describe('deleteTarget', () => {
  let sim: SimClusterHandle;
  let kube: KubeClient;
  let health: HealthAssessor;
  let stateDir: string;
  beforeAll(async () => {
    health = await defaultHealthAssessor();
    sim = await startSimCluster({ name: 'delete-target' });
    const kc = new KubeConfig();
    kc.loadFromString(sim.kubeconfig());
    kube = createKubeClient(kc);
    stateDir = await mkdtemp(join(tmpdir(), 'flotilla-delete-target-'));
  });
  afterAll(async () => {
    await sim.stop();
    await rm(stateDir, { recursive: true, force: true });
  });

  const tombstone = (ns: string): TargetDeletion => ({
    id: `del-${ns}`,
    targetId: `t-${ns}`,
    name: ns,
    namespace: ns,
    bundleDigest: DIGEST,
  });

  /** Syncs the manifests as target `ns` would have, so the objects carry its tracking annotation. */
  async function synced(ns: string, manifests: KubeObject[]): Promise<ResourceId[]> {
    const result = await syncTarget({
      kube,
      health,
      assignment: assignmentSchema.parse({
        targetId: `t-${ns}`,
        name: ns,
        appSet: 'del',
        namespace: ns,
        revision: 'r1',
        bundleDigest: DIGEST,
        syncPolicy: {},
      }),
      manifests,
      inventory: [],
      trigger: 'auto',
      pollMs: 25,
      waitTimeoutMs: 30_000,
    });
    expect(result.report.outcome, result.report.message).toBe('Succeeded');
    return result.inventory;
  }

  /** Deletes the target as the agent would, with its progress in a real state dir. */
  async function remove(
    ns: string,
    manifests: KubeObject[],
    inventory: ResourceId[],
    signal?: AbortSignal,
  ): Promise<DeleteTargetResult> {
    const store = new StateStore(stateDir);
    await store.init();
    const deletion = tombstone(ns);
    return deleteTarget({
      kube,
      health,
      deletion,
      manifests,
      inventory,
      progress: await store.loadDeletionProgress(deletion.id),
      saveProgress: (p) => store.saveDeletionProgress(p),
      pollMs: 25,
      waitTimeoutMs: 30_000,
      ...(signal ? { signal } : {}),
    });
  }

  const get = (kind: string, ns: string, name: string) =>
    kube.get({
      apiVersion: kind === 'Job' ? 'batch/v1' : kind === 'Deployment' ? 'apps/v1' : 'v1',
      kind,
      name,
      ...(kind === 'Namespace' ? {} : { namespace: ns }),
    });

  /** The cluster's own write log, for the objects this case names. */
  function writeLog(ns: string, names: readonly string[]): { log: string[]; stop: () => void } {
    const log: string[] = [];
    const stop = sim.api.store.subscribe((e) => {
      if (e.namespace !== ns || !names.includes(e.name) || e.type === 'MODIFIED') return;
      log.push(`${e.type} ${e.resource.split('/')[1] ?? ''}/${e.name}`);
    });
    return { log, stop };
  }

  it('a Namespace with Delete=false survives the deletion, as does an object another target tracks; PreDelete runs first, the waves in reverse, PostDelete last', async () => {
    const ns = 'del-keep';
    const manifests = [
      namespace(ns, { 'argocd.argoproj.io/sync-options': 'Delete=false' }),
      configMap('settings'),
      deployment,
      job('drain', {
        'argocd.argoproj.io/hook': 'PreDelete',
        'argocd.argoproj.io/hook-delete-policy': 'HookSucceeded',
      }),
      job('farewell', { 'helm.sh/hook': 'post-delete' }),
    ];
    const inventory = await synced(ns, manifests);
    // A sync never runs deletion hooks.
    expect(await get('Job', ns, 'drain')).toBeUndefined();
    expect(await get('Job', ns, 'farewell')).toBeUndefined();
    // Another target's object, even when this target's inventory names it by mistake, is not ours.
    await kube.apply({
      ...configMap('foreign'),
      metadata: {
        name: 'foreign',
        namespace: ns,
        annotations: { [TRACKING_ANNOTATION]: 'someone-else' },
        labels: { [TRACKING_LABEL]: 'true' },
      },
    });
    const foreign: ResourceId = { apiVersion: 'v1', kind: 'ConfigMap', namespace: ns, name: 'foreign' };

    const { log, stop } = writeLog(ns, ['drain', 'web', 'settings', 'farewell']);
    let result: DeleteTargetResult;
    try {
      result = await remove(ns, manifests, [...inventory, foreign]);
    } finally {
      stop();
    }
    expect(result.report.outcome, result.report.message).toBe('Succeeded');
    expect(log).toEqual([
      'ADDED jobs/drain',
      'DELETED jobs/drain',
      'DELETED deployments/web',
      'DELETED configmaps/settings',
      'ADDED jobs/farewell',
    ]);
    expect(await get('Namespace', ns, ns)).toBeDefined();
    expect(await get('ConfigMap', ns, 'foreign')).toBeDefined();
    expect(await get('ConfigMap', ns, 'settings')).toBeUndefined();
    expect(await get('Deployment', ns, 'web')).toBeUndefined();
    const lines = result.report.resources.map((r) => `${r.hookPhase ?? '-'} ${r.kind}/${r.name}:${r.action}`);
    expect(lines.sort()).toEqual(
      [
        '- ConfigMap/foreign:kept',
        '- Namespace/del-keep:kept',
        '- Deployment/web:deleted',
        '- ConfigMap/settings:deleted',
        'PreDelete Job/drain:applied',
        'PostDelete Job/farewell:applied',
      ].sort(),
    );
    const byName = new Map(result.report.resources.map((r) => [r.name, r.message]));
    expect(byName.get(ns)).toBe('Delete=false: left in place');
    expect(byName.get('foreign')).toBe('tracked by target someone-else, not this one');
    expect(result.report.message).toBe('2 object(s) deleted, 1 kept');
    // Nothing is tracked any more: what stays was kept on purpose or is someone else's.
    expect(result.inventory).toEqual([]);
  });

  it('a PVC with helm.sh/resource-policy: keep survives, and so does the Namespace holding it', async () => {
    const ns = 'del-helm';
    const manifests = [namespace(ns), configMap('settings'), pvc];
    const inventory = await synced(ns, manifests);
    const result = await remove(ns, manifests, inventory);
    expect(result.report.outcome, result.report.message).toBe('Succeeded');
    expect(await get('PersistentVolumeClaim', ns, 'data')).toBeDefined();
    expect(await get('Namespace', ns, ns)).toBeDefined();
    expect(await get('ConfigMap', ns, 'settings')).toBeUndefined();
    const byName = new Map(result.report.resources.map((r) => [r.name, `${r.action}: ${r.message}`]));
    expect(byName.get('data')).toBe('kept: helm.sh/resource-policy: keep: left in place');
    expect(byName.get(ns)).toBe(
      'kept: left in place: it holds objects kept on deletion, which would go with it',
    );
    expect(byName.get('settings')).toBe('deleted: ');
  });

  it('a failing PreDelete hook stops the deletion: nothing is deleted and PostDelete does not run', async () => {
    const ns = 'del-fail';
    const manifests = [
      namespace(ns),
      configMap('settings'),
      job('drain', { 'argocd.argoproj.io/hook': 'PreDelete' }, 'busybox:1.36-fail'),
      job('farewell', { 'argocd.argoproj.io/hook': 'PostDelete' }),
    ];
    const inventory = await synced(ns, manifests);
    const result = await remove(ns, manifests, inventory);
    expect(result.report.outcome).toBe('Failed');
    expect(result.report.message).toMatch(
      /^PreDelete hook failed: batch\/Job del-fail\/drain: .*; nothing deleted$/,
    );
    expect(await get('ConfigMap', ns, 'settings')).toBeDefined();
    expect(await get('Namespace', ns, ns)).toBeDefined();
    expect(await get('Job', ns, 'farewell')).toBeUndefined();
    expect(result.inventory).toEqual(inventory);
    const store = new StateStore(stateDir);
    expect((await store.loadDeletionProgress(`del-${ns}`)).preDeleteDone).toBe(false);
  });

  it('after a restart mid-deletion, PreDelete hooks that succeeded do not run again', async () => {
    const ns = 'del-restart';
    // A finalizer someone else removes holds the ConfigMap (and the deletion) until then.
    const held = configMap('held', {}, { finalizers: ['example.com/hold'] });
    const manifests = [
      namespace(ns),
      held,
      configMap('settings', { 'argocd.argoproj.io/sync-wave': '1' }),
      job('drain', { 'argocd.argoproj.io/hook': 'PreDelete' }),
    ];
    const inventory = await synced(ns, manifests);
    const { log, stop } = writeLog(ns, ['drain']);
    // The agent stops while the held ConfigMap waits for its finalizer.
    const stopping = new AbortController();
    const unsubscribe = sim.api.store.subscribe((e) => {
      const meta = e.object['metadata'] as { deletionTimestamp?: string } | undefined;
      if (e.name === 'held' && e.namespace === ns && meta?.deletionTimestamp) stopping.abort();
    });
    let first: DeleteTargetResult;
    try {
      first = await remove(ns, manifests, inventory, stopping.signal);
    } finally {
      unsubscribe();
    }
    expect(first.interrupted).toBe(true);
    expect(await get('ConfigMap', ns, 'settings')).toBeUndefined();
    expect(first.inventory.map((id) => id.name)).toContain('held');

    // Whoever holds it lets go: the finalizer goes, and the object with it.
    // A merge patch, as a controller lets go: the object's resourceVersion keeps moving while the
    // deletion runs, so a read-then-replace could lose the race (409).
    sim.api.patch(
      sim.api.rt('', 'v1', 'configmaps'),
      ns,
      'held',
      'merge',
      { metadata: { finalizers: null } },
      {
        manager: 'test',
      },
    );
    await expect.poll(() => get('ConfigMap', ns, 'held'), poll).toBeUndefined();

    let second: DeleteTargetResult;
    try {
      second = await remove(ns, manifests, first.inventory);
    } finally {
      stop();
    }
    expect(second.report.outcome, second.report.message).toBe('Succeeded');
    expect(second.report.message).toMatch(
      /^PreDelete hooks succeeded in an earlier attempt: not run again; /,
    );
    expect(log.filter((l) => l === 'ADDED jobs/drain')).toHaveLength(1);
    await expect.poll(() => get('Namespace', ns, ns), poll).toBeUndefined();
  });
});
