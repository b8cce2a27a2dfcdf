/* eslint-disable @typescript-eslint/no-unsafe-member-access, @typescript-eslint/no-unsafe-assignment, @typescript-eslint/no-unsafe-call, @typescript-eslint/no-unsafe-return --
   API results are read as untyped JSON documents and checked field by field. */
import { beforeEach, describe, expect, it } from 'vitest';
import { ClusterApi } from '../api/cluster-api.js';
import { ManualClock } from '../clock.js';
import { ResourceRegistry } from '../resources/resource-registry.js';
import { ObjectStore } from '../store/object-store.js';
import { type ControllerName, ControllerManager } from './controller-manager.js';

type Obj = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

/**
 * The manager driven by hand, without the scheduler: every store event goes through `observe`
 * (as the cluster's subscription does), and a "pass" is one `reconcile()` call.
 */
describe('ControllerManager: a pass runs only the controllers with work', () => {
  let api: ClusterApi;
  let manager: ControllerManager;
  let wakes: boolean[];
  let clock: ManualClock;
  const rt = (group: string, plural: string) => api.rt(group, 'v1', plural);
  const apply = (group: string, plural: string, ns: string, body: Obj): Obj =>
    api.patch(rt(group, plural), ns, String(body['metadata']['name']), 'apply', body, {
      manager: 'test',
      force: true,
    }).object;
  const get = (group: string, plural: string, ns: string, name: string): Obj =>
    api.get(rt(group, plural), ns, name);
  const list = (group: string, plural: string, ns?: string): Obj[] => api.list(rt(group, plural), ns).items;
  /** Runs one pass and returns the controllers it ran. */
  const pass = (): ControllerName[] => {
    const before = manager.stats().runs;
    manager.reconcile();
    const after = manager.stats().runs;
    return (Object.keys(after) as ControllerName[]).filter((n) => after[n] > before[n]);
  };
  /** Passes until one runs nothing (at most 50); returns how many ran something. */
  const settle = (): number => {
    for (let i = 0; i < 50; i++) if (pass().length === 0) return i;
    throw new Error('controllers did not settle in 50 passes');
  };
  const deployment = (name: string, image: string): Obj => ({
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name },
    spec: {
      replicas: 2,
      selector: { matchLabels: { app: name } },
      template: { metadata: { labels: { app: name } }, spec: { containers: [{ name: 'main', image }] } },
    },
  });

  beforeEach(() => {
    api = new ClusterApi(
      new ResourceRegistry(),
      new ObjectStore(2000, { freeze: true }),
      (clock = new ManualClock()),
    );
    api.bootstrap();
    manager = new ControllerManager(api);
    wakes = [];
    api.store.subscribe((e) => wakes.push(manager.observe(e)));
  });

  it('runs every controller on the first pass, then nothing once settled', () => {
    expect(pass()).toHaveLength(9);
    expect(pass()).toEqual([]);
    expect(manager.stats().passes).toBe(2);
  });

  it('a ConfigMap, Secret or ClusterIP Service write wakes nobody and costs a pass no controller run', () => {
    settle();
    apply('', 'configmaps', 'default', {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'settings' },
      data: { a: '1' },
    });
    apply('', 'secrets', 'default', {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: 'token' },
      stringData: { t: 'x' },
    });
    apply('', 'services', 'default', {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name: 'web' },
      spec: { ports: [{ port: 80 }] },
    });
    expect(wakes).toEqual([false, false, false]);
    expect(pass()).toEqual([]);
  });

  it('a Deployment rolls out through the controllers that read what changed, step by step', () => {
    settle();
    apply('apps', 'deployments', 'default', deployment('web', 'nginx:1.27'));
    expect(wakes).toEqual([true]);
    // Within one pass a controller sees what the ones before it wrote: Deployment → ReplicaSet → Pods.
    expect(pass()).toEqual([
      'deployments',
      'replicasets',
      'statefulsets',
      'daemonsets',
      'jobs',
      'pods',
      'autoscaler',
    ]);
    expect(api.list(rt('', 'pods'), 'default').items).toHaveLength(2);
    expect(settle()).toBeGreaterThan(1);
    const d = get('apps', 'deployments', 'default', 'web');
    expect(d['status']).toMatchObject({ replicas: 2, readyReplicas: 2, availableReplicas: 2 });
    expect(d['metadata']['annotations']['deployment.kubernetes.io/revision']).toBe('1');

    apply('apps', 'deployments', 'default', deployment('web', 'nginx:1.28'));
    expect(settle()).toBeGreaterThan(2);
    const rs = list('apps', 'replicasets', 'default');
    expect(
      rs.map((r) => [r['spec']['template']['spec']['containers'][0]['image'], r['spec']['replicas']]),
    ).toEqual(
      expect.arrayContaining([
        ['nginx:1.27', 0],
        ['nginx:1.28', 2],
      ]),
    );
    // Nothing referenced a deleted owner and nothing was being deleted: no garbage collection walk.
    expect(manager.stats().runs.lifecycle).toBe(1);
  });

  it('garbage collection runs when an owner goes away, and namespace cleanup until the namespace is gone', () => {
    apply('', 'namespaces', '', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'shop' } });
    apply('apps', 'deployments', 'shop', deployment('cart', 'nginx:1.27'));
    settle();
    const lifecycleRuns = manager.stats().runs.lifecycle;
    api.delete(rt('apps', 'deployments'), 'shop', 'cart', { propagationPolicy: 'Background' });
    settle();
    expect(manager.stats().runs.lifecycle).toBeGreaterThan(lifecycleRuns);
    expect(api.list(rt('apps', 'replicasets'), 'shop').items).toEqual([]);
    expect(api.list(rt('', 'pods'), 'shop').items).toEqual([]);

    apply('', 'configmaps', 'shop', { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'c' } });
    api.delete(rt('', 'namespaces'), '', 'shop', {});
    settle();
    expect(api.tryGet(rt('', 'namespaces'), '', 'shop')).toBeUndefined();
    expect(api.list(rt('', 'configmaps'), 'shop').items).toEqual([]);
  });

  it('a controller that asked to be woken runs on the next pass even when nothing it reads changed', () => {
    const d = deployment('slow', 'nginx:1.27-unready');
    apply('apps', 'deployments', 'default', { ...d, spec: { ...d['spec'], progressDeadlineSeconds: 60 } });
    for (let i = 0; i < 10; i++) pass();
    // Waiting on its progress deadline, the Deployment controller alone keeps asking for a wake.
    expect(pass()).toEqual(['deployments']);
    clock.advance(61_000);
    settle();
    const status = get('apps', 'deployments', 'default', 'slow')['status'];
    expect(status['conditions']).toContainEqual(
      expect.objectContaining({ type: 'Progressing', status: 'False', reason: 'ProgressDeadlineExceeded' }),
    );
  });

  it('with frozen snapshots, changing an object read from the store throws', () => {
    const ns = get('', 'namespaces', '', 'default');
    expect(() => {
      ns['metadata']['labels']['x'] = 'y';
    }).toThrow(TypeError);
    expect(() => list('', 'namespaces')[0]!['spec']['finalizers'].push('x')).toThrow(TypeError);
  });
});
