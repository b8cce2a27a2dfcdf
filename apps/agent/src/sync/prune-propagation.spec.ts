import { KubeConfig } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type KubeObject, assignmentSchema } from '@flotilla/contract';
import { type SimClusterHandle, startSimCluster } from '@flotilla/kube-sim';
import { type HealthAssessor } from '../health/target-health.js';
import { type KubeClient, createKubeClient } from '../kube/kube-client.js';
import { defaultHealthAssessor } from '../lib-adapters.js';
import { pollOptions as poll } from '../testing/agent-harness.js';
import { syncTarget } from './sync-target.js';

const namespaceOf = (namespace: string): KubeObject => ({
  apiVersion: 'v1',
  kind: 'Namespace',
  metadata: { name: namespace },
});
const deployment: KubeObject = {
  apiVersion: 'apps/v1',
  kind: 'Deployment',
  metadata: { name: 'web' },
  spec: {
    replicas: 1,
    selector: { matchLabels: { app: 'web' } },
    template: {
      metadata: { labels: { app: 'web' } },
      spec: { containers: [{ name: 'web', image: 'nginx:1.27' }] },
    },
  },
};

/** PrunePropagationPolicy against a simulated cluster whose controllers own ReplicaSets and Pods. */
describe('PrunePropagationPolicy: how a pruned Deployment takes its ReplicaSets (#14)', () => {
  let sim: SimClusterHandle;
  let kube: KubeClient;
  let health: HealthAssessor;
  beforeAll(async () => {
    health = await defaultHealthAssessor();
    sim = await startSimCluster({ name: 'prune-propagation' });
    const kc = new KubeConfig();
    kc.loadFromString(sim.kubeconfig());
    kube = createKubeClient(kc);
  });
  afterAll(async () => {
    await sim.stop();
  });

  const replicaSetsIn = async (namespace: string) =>
    (await kube.list('apps/v1', 'ReplicaSet')).items.filter((r) => r.metadata.namespace === namespace);
  const webIn = (namespace: string) =>
    kube.get({ apiVersion: 'apps/v1', kind: 'Deployment', namespace, name: 'web' });

  /** Syncs the Deployment, waits for its ReplicaSet, then syncs a revision without it. */
  async function pruneWeb(policy: 'foreground' | 'background' | 'orphan' | undefined, namespace: string) {
    const assignment = assignmentSchema.parse({
      targetId: `t-${namespace}`,
      name: namespace,
      appSet: 'web',
      namespace,
      revision: 'r1',
      bundleDigest: `sha256:${'0'.repeat(64)}`,
      syncPolicy: { prune: true, ...(policy ? { prunePropagationPolicy: policy } : {}) },
    });
    const base = { kube, health, assignment, trigger: 'auto' as const, pollMs: 50 };
    const first = await syncTarget({
      ...base,
      manifests: [namespaceOf(namespace), deployment],
      inventory: [],
    });
    expect(first.report.outcome).toBe('Succeeded');
    await expect.poll(async () => (await replicaSetsIn(namespace)).length, poll).toBe(1);
    const second = await syncTarget({
      ...base,
      manifests: [namespaceOf(namespace)],
      inventory: first.inventory,
    });
    expect(second.report.outcome).toBe('Succeeded');
    return second.report.resources.find((r) => r.kind === 'Deployment');
  }

  it('foreground, the default: the Deployment is gone only after its ReplicaSets', async () => {
    const pruned = await pruneWeb(undefined, 'prune-default');
    expect(pruned).toMatchObject({ action: 'pruned', message: '' });
    await expect.poll(() => webIn('prune-default'), poll).toBeUndefined();
    // Foreground deletion removes the owner last: once it is gone, nothing it owned is left.
    expect(await replicaSetsIn('prune-default')).toEqual([]);

    await pruneWeb('foreground', 'prune-foreground');
    await expect.poll(() => webIn('prune-foreground'), poll).toBeUndefined();
    expect(await replicaSetsIn('prune-foreground')).toEqual([]);
  });

  it('background: the Deployment goes at once, its ReplicaSets are collected after', async () => {
    const pruned = await pruneWeb('background', 'prune-background');
    expect(pruned?.action).toBe('pruned');
    expect(await webIn('prune-background')).toBeUndefined();
    await expect.poll(async () => (await replicaSetsIn('prune-background')).length, poll).toBe(0);
  });

  it('orphan: the Deployment goes and its ReplicaSet stays, without the owner reference', async () => {
    const pruned = await pruneWeb('orphan', 'prune-orphan');
    expect(pruned?.action).toBe('pruned');
    expect(pruned?.message).toContain('dependents were left in place');
    await expect.poll(() => webIn('prune-orphan'), poll).toBeUndefined();
    await expect
      .poll(
        async () => (await replicaSetsIn('prune-orphan')).map((r) => r.metadata.ownerReferences ?? []),
        poll,
      )
      .toEqual([[]]);
  });
});
