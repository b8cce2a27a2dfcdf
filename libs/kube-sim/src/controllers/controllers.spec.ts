/* eslint-disable @typescript-eslint/no-unsafe-member-access, @typescript-eslint/no-unsafe-assignment, @typescript-eslint/no-unsafe-call, @typescript-eslint/no-unsafe-return --
   API results are read as untyped JSON documents and checked field by field. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../clock.js';
import { startSimCluster, type SimClusterHandle } from '../cluster.js';

type Obj = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

const podTemplate = (app: string, image: string, restartPolicy?: string): Obj => ({
  metadata: { labels: { app } },
  spec: { containers: [{ name: 'main', image }], ...(restartPolicy ? { restartPolicy } : {}) },
});

describe('simulated controllers', () => {
  let c: SimClusterHandle;
  const clock = new ManualClock(Date.UTC(2026, 5, 1));
  const rt = (group: string, plural: string) =>
    c.api.rt(group, group === 'autoscaling' ? 'v2' : 'v1', plural);
  const apply = (group: string, plural: string, body: Obj): Obj =>
    c.api.patch(rt(group, plural), 'default', String(body['metadata']['name']), 'apply', body, {
      manager: 'test',
      force: true,
    }).object;
  const get = (group: string, plural: string, name: string): Obj =>
    c.api.get(rt(group, plural), 'default', name);
  const list = (group: string, plural: string, selector?: string): Obj[] =>
    c.api.list(rt(group, plural), 'default', { labelSelector: selector ?? null }).items;
  const condition = (o: Obj, type: string): Obj | undefined =>
    (o['status']?.['conditions'] as Obj[] | undefined)?.find((x) => x['type'] === type);

  beforeAll(async () => {
    c = await startSimCluster({ name: 'controllers', clock, freezeObjects: true });
  });
  afterAll(async () => {
    await c.stop();
  });

  it('StatefulSet: ordered pods, revisions converge', async () => {
    apply('apps', 'statefulsets', {
      apiVersion: 'apps/v1',
      kind: 'StatefulSet',
      metadata: { name: 'db' },
      spec: {
        replicas: 3,
        serviceName: 'db',
        selector: { matchLabels: { app: 'db' } },
        template: podTemplate('db', 'postgres:16'),
      },
    });
    await expect.poll(() => get('apps', 'statefulsets', 'db')['status']?.['readyReplicas']).toBe(3);
    const s = get('apps', 'statefulsets', 'db')['status'];
    expect(s).toMatchObject({
      observedGeneration: 1,
      replicas: 3,
      currentReplicas: 3,
      updatedReplicas: 3,
      availableReplicas: 3,
    });
    expect(s['currentRevision']).toBe(s['updateRevision']);
    expect(list('', 'pods', 'app=db').map((p) => p['metadata']['name'])).toEqual(['db-0', 'db-1', 'db-2']);
  });

  it('DaemonSet: one pod on the one simulated node', async () => {
    apply('apps', 'daemonsets', {
      apiVersion: 'apps/v1',
      kind: 'DaemonSet',
      metadata: { name: 'agent' },
      spec: { selector: { matchLabels: { app: 'agent' } }, template: podTemplate('agent', 'agent:1') },
    });
    await expect.poll(() => get('apps', 'daemonsets', 'agent')['status']?.['numberReady']).toBe(1);
    expect(get('apps', 'daemonsets', 'agent')['status']).toMatchObject({
      desiredNumberScheduled: 1,
      currentNumberScheduled: 1,
      updatedNumberScheduled: 1,
      numberAvailable: 1,
      numberMisscheduled: 0,
      observedGeneration: 1,
    });
  });

  it('Jobs complete, or fail past backoffLimit with a -fail image', async () => {
    apply('batch', 'jobs', {
      apiVersion: 'batch/v1',
      kind: 'Job',
      metadata: { name: 'ok' },
      spec: { template: podTemplate('ok', 'busybox:1.36', 'Never') },
    });
    apply('batch', 'jobs', {
      apiVersion: 'batch/v1',
      kind: 'Job',
      metadata: { name: 'bad' },
      spec: { backoffLimit: 1, template: podTemplate('bad', 'busybox:1.36-fail', 'Never') },
    });
    await expect.poll(() => condition(get('batch', 'jobs', 'ok'), 'Complete')?.['status']).toBe('True');
    expect(get('batch', 'jobs', 'ok')['status']).toMatchObject({ succeeded: 1, ready: 0, terminating: 0 });
    await expect
      .poll(() => condition(get('batch', 'jobs', 'bad'), 'Failed')?.['reason'])
      .toBe('BackoffLimitExceeded');
    expect(get('batch', 'jobs', 'bad')['status']['failed']).toBe(2);
  });

  it('bare pods with restartPolicy Never or OnFailure run to completion; Always pods keep running', async () => {
    const pod = (name: string, image: string, restartPolicy: string): Obj =>
      c.api.patch(
        rt('', 'pods'),
        'default',
        name,
        'apply',
        { apiVersion: 'v1', kind: 'Pod', metadata: { name }, ...podTemplate(name, image, restartPolicy) },
        { manager: 'test', force: true },
      ).object;
    pod('once', 'busybox:1.36', 'Never');
    pod('retry', 'busybox:1.36', 'OnFailure');
    pod('broken', 'busybox:1.36-fail', 'Never');
    pod('server', 'nginx:1.27', 'Always');
    const phase = (name: string): unknown => get('', 'pods', name)['status']?.['phase'];
    await expect.poll(() => phase('once')).toBe('Succeeded');
    await expect.poll(() => phase('retry')).toBe('Succeeded');
    await expect.poll(() => phase('broken')).toBe('Failed');
    await expect.poll(() => condition(get('', 'pods', 'server'), 'Ready')?.['status']).toBe('True');
    expect(phase('server')).toBe('Running');
  });

  it('-crashloop pods restart forever with back-off on the cluster clock', async () => {
    apply('apps', 'deployments', {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name: 'crash' },
      spec: {
        replicas: 1,
        selector: { matchLabels: { app: 'crash' } },
        template: podTemplate('crash', 'app:2-crashloop'),
      },
    });
    const pod = (): Obj | undefined => list('', 'pods', 'app=crash')[0];
    await expect
      .poll(() => pod()?.['status']?.['containerStatuses']?.[0]?.['state']?.['waiting']?.['reason'])
      .toBe('CrashLoopBackOff');
    const before = pod()!['status']['containerStatuses'][0]['restartCount'] as number;
    clock.advance(20_000);
    await expect.poll(() => pod()!['status']['containerStatuses'][0]['restartCount']).toBe(before + 1);
    expect(pod()!['status']['phase']).toBe('Running');
  });

  it('-unready rollouts reach ProgressDeadlineExceeded after progressDeadlineSeconds', async () => {
    apply('apps', 'deployments', {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name: 'slow' },
      spec: {
        replicas: 2,
        selector: { matchLabels: { app: 'slow' } },
        template: podTemplate('slow', 'app:1-unready'),
      },
    });
    // Wait until the rollout is stuck (all pods exist, none ready): any progress would reset the deadline.
    await expect.poll(() => get('apps', 'deployments', 'slow')['status']?.['updatedReplicas']).toBe(2);
    await expect
      .poll(() => list('', 'pods', 'app=slow').filter((p) => p['status']?.['phase'] === 'Running').length)
      .toBe(2);
    expect(condition(get('apps', 'deployments', 'slow'), 'Progressing')?.['reason']).toBe(
      'ReplicaSetUpdated',
    );
    clock.advance(601_000);
    await expect
      .poll(() => condition(get('apps', 'deployments', 'slow'), 'Progressing')?.['reason'])
      .toBe('ProgressDeadlineExceeded');
    const p = condition(get('apps', 'deployments', 'slow'), 'Progressing')!;
    expect(p['status']).toBe('False');
    expect(p['message']).toMatch(/^ReplicaSet "slow-[a-z0-9]+" has timed out progressing\.$/);
  });

  it('garbage-collects dependents in the background, and orphans them on request', async () => {
    const deploy = (name: string): Obj => ({
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name },
      spec: {
        replicas: 1,
        selector: { matchLabels: { app: name } },
        template: podTemplate(name, 'nginx:1.27'),
      },
    });
    apply('apps', 'deployments', deploy('gc-bg'));
    apply('apps', 'deployments', deploy('gc-orphan'));
    await expect.poll(() => list('', 'pods', 'app in (gc-bg,gc-orphan)').length).toBe(2);
    c.api.delete(rt('apps', 'deployments'), 'default', 'gc-bg', { propagationPolicy: 'Background' });
    c.api.delete(rt('apps', 'deployments'), 'default', 'gc-orphan', { propagationPolicy: 'Orphan' });
    await expect.poll(() => list('apps', 'replicasets', 'app=gc-bg').length).toBe(0);
    await expect.poll(() => list('', 'pods', 'app=gc-bg').length).toBe(0);
    await expect.poll(() => c.api.tryGet(rt('apps', 'deployments'), 'default', 'gc-orphan')).toBeUndefined();
    const orphans = list('apps', 'replicasets', 'app=gc-orphan');
    expect(orphans).toHaveLength(1);
    expect(orphans[0]!['metadata']['ownerReferences']).toBeUndefined();
  });

  it('other writers: the autoscaler scales via /scale, the webhook injects an annotation and a sidecar', async () => {
    const web = {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name: 'hooked' },
      spec: {
        replicas: 1,
        selector: { matchLabels: { app: 'hooked' } },
        template: podTemplate('hooked', 'nginx:1.27'),
      },
    };
    c.writers.webhook = {
      annotation: ['sidecar.example.com/injected', 'true'],
      sidecar: { name: 'proxy', image: 'envoy:1.30' },
    };
    const first = apply('apps', 'deployments', web);
    expect(first['metadata']['annotations']).toEqual({ 'sidecar.example.com/injected': 'true' });
    expect(first['spec']['template']['spec']['containers'].map((x: Obj) => x['name'])).toEqual([
      'main',
      'proxy',
    ]);
    const again = apply('apps', 'deployments', web);
    expect(again['metadata']['resourceVersion']).toBe(first['metadata']['resourceVersion']);
    expect(again['spec']['template']['spec']['containers']).toHaveLength(2);
    c.writers.webhook = undefined;

    c.writers.autoscaler = { replicas: 3 };
    c.poke();
    await expect.poll(() => get('apps', 'deployments', 'hooked')['spec']['replicas']).toBe(3);
    const entry = (get('apps', 'deployments', 'hooked')['metadata']['managedFields'] as Obj[]).find(
      (m) => m['manager'] === 'sim-autoscaler',
    );
    expect(entry).toMatchObject({
      operation: 'Update',
      subresource: 'scale',
      fieldsV1: { 'f:spec': { 'f:replicas': {} } },
    });
    c.writers.autoscaler = undefined;
  });

  it('binds PVCs and gives LoadBalancer Services an ingress IP', async () => {
    apply('', 'persistentvolumeclaims', {
      apiVersion: 'v1',
      kind: 'PersistentVolumeClaim',
      metadata: { name: 'data' },
      spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1024Mi' } } },
    });
    apply('', 'services', {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name: 'lb' },
      spec: { type: 'LoadBalancer', ports: [{ port: 80 }] },
    });
    await expect.poll(() => get('', 'persistentvolumeclaims', 'data')['status']?.['phase']).toBe('Bound');
    expect(get('', 'persistentvolumeclaims', 'data')['status']['capacity']).toEqual({ storage: '1Gi' });
    await expect
      .poll(() => get('', 'services', 'lb')['status']?.['loadBalancer']?.['ingress']?.[0]?.['ipMode'])
      .toBe('VIP');
    const spec = get('', 'services', 'lb')['spec'];
    expect(spec).toMatchObject({
      type: 'LoadBalancer',
      externalTrafficPolicy: 'Cluster',
      allocateLoadBalancerNodePorts: true,
    });
    expect(spec['ports'][0]).toMatchObject({ port: 80, protocol: 'TCP', targetPort: 80 });
    expect(spec['ports'][0]['nodePort']).toBeGreaterThanOrEqual(30000);
  });
});
