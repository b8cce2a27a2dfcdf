import { KubeConfig } from '@kubernetes/client-node';
import { pino } from 'pino';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { type KubeObject } from '@flotilla/contract';
import { type SimClusterHandle, startSimCluster } from '@flotilla/kube-sim';
import { type KubeClient, createKubeClient } from './kube-client.js';
import { KubeConnections } from './kube-connections.js';
import { ObjectWatcher, type WatchEventType } from './object-watcher.js';

const poll = { timeout: 15_000, interval: 50 };

/** A ConfigMap as the agent applies it: with the tracking label its watches select on. */
function configMap(
  name: string,
  value: string,
  labels: Record<string, string> = { 'flotilla.dev/tracked': 'true' },
): KubeObject {
  return {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name, namespace: 'default', labels },
    data: { value },
  };
}

describe('ObjectWatcher: list + watch per kind against a simulated cluster', () => {
  let sim: SimClusterHandle;
  let connections: KubeConnections;
  let kube: KubeClient;
  let watcher: ObjectWatcher;
  let events: { type: WatchEventType; name: string; value: string | undefined }[];
  const valueOf = (name: string): unknown =>
    (watcher.cached('v1', 'ConfigMap', name, 'default') as { data?: { value?: string } } | undefined)?.data
      ?.value;

  beforeAll(async () => {
    sim = await startSimCluster({ name: 'watcher' });
  });
  afterAll(async () => {
    await sim.stop();
  });
  beforeEach(() => {
    const kc = new KubeConfig();
    kc.loadFromString(sim.kubeconfig());
    connections = new KubeConnections(kc);
    kube = createKubeClient(connections.kubeConfig);
    watcher = new ObjectWatcher(connections.kubeConfig, kube, pino({ level: 'silent' }));
    events = [];
    watcher.onChange((type, obj) => {
      if (obj.metadata.namespace === 'default')
        events.push({
          type,
          name: obj.metadata.name,
          value: (obj as { data?: { value?: string } }).data?.value,
        });
    });
  });
  afterEach(async () => {
    await watcher.stop();
    await connections.close();
    for (const name of ['a', 'b', 'c'])
      await kube.delete({ apiVersion: 'v1', kind: 'ConfigMap', namespace: 'default', name });
  });

  it('fills the cache from the first list, then follows changes and deletions', async () => {
    await kube.apply(configMap('a', '1'));
    await watcher.ensure('v1', 'ConfigMap');
    expect(watcher.isWatching('v1', 'ConfigMap')).toBe(true);
    expect(valueOf('a')).toBe('1');
    expect(events).toEqual([{ type: 'added', name: 'a', value: '1' }]);

    await kube.apply(configMap('a', '2'));
    await kube.apply(configMap('b', '1'));
    await kube.delete({ apiVersion: 'v1', kind: 'ConfigMap', namespace: 'default', name: 'a' });
    await expect.poll(() => events.length, poll).toBe(4);
    expect(events.slice(1)).toEqual([
      { type: 'modified', name: 'a', value: '2' },
      { type: 'added', name: 'b', value: '1' },
      { type: 'deleted', name: 'a', value: '2' },
    ]);
    expect(valueOf('a')).toBeUndefined();
    expect(valueOf('b')).toBe('1');
  });

  it('resumes a watch the server ended, without replaying what it already saw', async () => {
    await kube.apply(configMap('a', '1'));
    await watcher.ensure('v1', 'ConfigMap');
    await expect.poll(() => sim.openWatches(), poll).toBe(1);
    expect(sim.closeWatches()).toBe(1);
    await expect.poll(() => sim.openWatches(), poll).toBe(1);
    await kube.apply(configMap('a', '2'));
    await expect.poll(() => valueOf('a'), poll).toBe('2');
    expect(events).toEqual([
      { type: 'added', name: 'a', value: '1' },
      { type: 'modified', name: 'a', value: '2' },
    ]);
  });

  it('lists again when its resourceVersion is gone (410), telling what changed meanwhile', async () => {
    await kube.apply(configMap('a', '1'));
    await kube.apply(configMap('b', '1'));
    await watcher.ensure('v1', 'ConfigMap');
    await expect.poll(() => sim.openWatches(), poll).toBe(1);
    // While nobody watches: a deleted, b changed, c created, and the history that would replay it dropped.
    const configMaps = sim.api.rt('', 'v1', 'configmaps');
    sim.api.patch(configMaps, 'default', 'b', 'merge', { data: { value: '2' } }, { manager: 'test' });
    sim.api.delete(configMaps, 'default', 'a', {});
    sim.api.create(configMaps, 'default', configMap('c', '1'), { manager: 'test' });
    sim.compactHistory();
    sim.closeWatches();
    await expect.poll(() => valueOf('c'), poll).toBe('1');
    expect(valueOf('a')).toBeUndefined();
    expect(valueOf('b')).toBe('2');
    expect(events.slice(2).sort((x, y) => x.name.localeCompare(y.name))).toEqual([
      { type: 'deleted', name: 'a', value: '1' },
      { type: 'modified', name: 'b', value: '2' },
      { type: 'added', name: 'c', value: '1' },
    ]);
    await expect.poll(() => sim.openWatches(), poll).toBe(1);
  });

  it('never lists, watches or caches an object without the tracking label, and lets go of one that loses it', async () => {
    await kube.apply(configMap('a', '1', {}));
    await kube.apply(configMap('b', '1'));
    await watcher.ensure('v1', 'ConfigMap');
    expect(valueOf('a')).toBeUndefined();
    expect(valueOf('b')).toBe('1');
    await kube.apply(configMap('c', '1', {}));
    // b loses its label: the server tells the watch it is gone from the selection.
    await kube.apply(configMap('b', '2', {}));
    await expect.poll(() => valueOf('b'), poll).toBeUndefined();
    expect(events).toEqual([
      { type: 'added', name: 'b', value: '1' },
      { type: 'deleted', name: 'b', value: '2' },
    ]);
    expect(watcher.cachedObjects).toBe(0);
  });

  it("keeps a Deployment as drift and health read it: its status, without the status writer's managedFields", async () => {
    const deployment: KubeObject = {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name: 'cached', namespace: 'default', labels: { 'flotilla.dev/tracked': 'true' } },
      spec: {
        replicas: 1,
        selector: { matchLabels: { app: 'cached' } },
        template: {
          metadata: { labels: { app: 'cached' } },
          spec: { containers: [{ name: 'app', image: 'registry.example/app:1.0' }] },
        },
      },
    };
    await kube.apply(deployment);
    await watcher.ensure('apps/v1', 'Deployment');
    try {
      // The simulated controller writes status through the status subresource, as the real one does.
      const managers = (o: KubeObject | undefined) =>
        ((o?.metadata['managedFields'] as { manager: string; subresource?: string }[] | undefined) ?? []).map(
          (e) => `${e.manager}${e.subresource ? `/${e.subresource}` : ''}`,
        );
      const live = () =>
        kube.get({ apiVersion: 'apps/v1', kind: 'Deployment', namespace: 'default', name: 'cached' });
      await expect
        .poll(async () => managers(await live()).some((m) => m.endsWith('/status')), poll)
        .toBe(true);
      const cachedReady = () =>
        (
          watcher.cached('apps/v1', 'Deployment', 'cached', 'default') as {
            status?: { readyReplicas?: number };
          }
        )?.status?.readyReplicas;
      await expect.poll(cachedReady, poll).toBe(1);
      const cached = watcher.cached('apps/v1', 'Deployment', 'cached', 'default');
      expect(managers(cached)).toEqual(managers(await live()).filter((m) => !m.endsWith('/status')));
      expect(managers(cached)).toContain('flotilla');
    } finally {
      await kube.delete({ apiVersion: 'apps/v1', kind: 'Deployment', namespace: 'default', name: 'cached' });
    }
  });

  it('stops its watches', async () => {
    await watcher.ensure('v1', 'ConfigMap');
    await expect.poll(() => sim.openWatches(), poll).toBe(1);
    await watcher.stop();
    await expect.poll(() => sim.openWatches(), poll).toBe(0);
    expect(watcher.isWatching('v1', 'ConfigMap')).toBe(false);
  });
});
