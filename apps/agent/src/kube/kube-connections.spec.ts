import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { HttpMethod, KubeConfig, RequestContext } from '@kubernetes/client-node';
import { pino } from 'pino';
import { stringify } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type KubeObject } from '@flotilla/contract';
import { type SimClusterHandle, startSimCluster } from '@flotilla/kube-sim';
import { createKubeClient, idOf } from './kube-client.js';
import { KubeConnections } from './kube-connections.js';
import { ObjectWatcher } from './object-watcher.js';

const poll = { timeout: 15_000, interval: 50 };

function configMap(i: number): KubeObject {
  return {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name: `cm-${i}`, namespace: 'default', labels: { 'flotilla.dev/tracked': 'true' } },
    data: { n: String(i) },
  };
}

/** The dispatcher client-node would send one request with, as its fetch call gets it. */
async function dispatcherOf(kc: KubeConfig, sim: SimClusterHandle): Promise<unknown> {
  const ctx = new RequestContext(`${sim.url}/api/v1/namespaces`, HttpMethod.GET);
  await kc.applySecurityAuthentication(ctx);
  return ctx.getDispatcher();
}

describe('KubeConnections: one keep-alive pool for the agent’s API requests and watches', () => {
  let sim: SimClusterHandle;
  let dir: string;
  beforeAll(async () => {
    sim = await startSimCluster({ name: 'pool' });
    dir = await mkdtemp(join(tmpdir(), 'kube-connections-'));
  });
  afterAll(async () => {
    await sim.stop();
    await rm(dir, { recursive: true, force: true });
  });

  it('client-node 2.0.1 alone opens a connection per request (when this fails, KubeConnections can go)', async () => {
    const kc = new KubeConfig();
    kc.loadFromString(sim.kubeconfig());
    const kube = createKubeClient(kc);
    const before = sim.acceptedConnections();
    for (let i = 0; i < 20; i++) await kube.list('v1', 'Namespace');
    expect(sim.acceptedConnections() - before).toBeGreaterThanOrEqual(20);
  });

  it('applies, reads, lists and deletes 200 times and watches over a handful of connections', async () => {
    const source = new KubeConfig();
    source.loadFromString(sim.kubeconfig());
    const connections = new KubeConnections(source);
    const kube = createKubeClient(connections.kubeConfig);
    const watcher = new ObjectWatcher(connections.kubeConfig, kube, pino({ level: 'silent' }));
    const seen = new Set<string>();
    watcher.onChange((type, obj) => {
      if (type !== 'deleted') seen.add(obj.metadata.name);
    });
    const opened = (since: number): number => sim.acceptedConnections() - since;
    try {
      const t0 = sim.acceptedConnections();
      await watcher.ensure('v1', 'ConfigMap');
      for (let i = 0; i < 50; i++) await kube.apply(configMap(i));
      await expect.poll(() => seen.size, poll).toBeGreaterThanOrEqual(50);
      for (let i = 0; i < 50; i++)
        expect((await kube.get(idOf(configMap(i))))?.data).toEqual({ n: String(i) });
      for (let i = 0; i < 50; i++) await kube.list('v1', 'ConfigMap');
      // 150 requests one after another and a watch: one connection for the requests, one for the watch.
      expect(opened(t0)).toBeLessThanOrEqual(3);

      // A burst in parallel needs more connections; they are kept for the requests after it.
      const t1 = sim.acceptedConnections();
      await Promise.all(Array.from({ length: 10 }, (_, i) => kube.delete(idOf(configMap(i)))));
      expect(opened(t1)).toBeLessThanOrEqual(10);
      const t2 = sim.acceptedConnections();
      for (let i = 10; i < 50; i++) expect(await kube.delete(idOf(configMap(i)))).toBe(true);
      expect(opened(t2)).toBe(0);
      await expect.poll(() => watcher.cached('v1', 'ConfigMap', 'cm-49', 'default'), poll).toBeUndefined();
    } finally {
      await watcher.stop();
      await connections.close();
    }
    expect(connections.dispatchersBuilt).toBe(1);
  });

  it('keeps the pool while only the token changes, and builds a new one (closing the old) when the client certificate rotates', async () => {
    // An exec credential plugin, as on EKS/GKE-style clusters: it prints what the files hold now,
    // already expired so that client-node runs it again for every request.
    const plugin = join(dir, 'plugin.mjs');
    const certFile = join(dir, 'cert');
    const tokenFile = join(dir, 'token');
    await writeFile(
      plugin,
      `import { readFileSync } from 'node:fs';
const read = (f) => readFileSync(${JSON.stringify(dir)} + '/' + f, 'utf8');
console.log(JSON.stringify({
  apiVersion: 'client.authentication.k8s.io/v1',
  kind: 'ExecCredential',
  status: { token: read('token'), clientCertificateData: read('cert'), clientKeyData: 'key-' + read('cert'),
    expirationTimestamp: new Date(Date.now() - 1000).toISOString() },
}));
`,
    );
    await writeFile(certFile, 'cert-1');
    await writeFile(tokenFile, 'token-1');
    const source = new KubeConfig();
    source.loadFromString(
      stringify({
        apiVersion: 'v1',
        kind: 'Config',
        clusters: [{ name: 'pool', cluster: { server: sim.url, 'insecure-skip-tls-verify': true } }],
        users: [
          {
            name: 'rotating',
            user: {
              exec: {
                apiVersion: 'client.authentication.k8s.io/v1',
                command: process.execPath,
                args: [plugin],
                interactiveMode: 'Never',
              },
            },
          },
        ],
        contexts: [{ name: 'pool', context: { cluster: 'pool', user: 'rotating' } }],
        'current-context': 'pool',
      }),
    );
    const connections = new KubeConnections(source);
    const kc = connections.kubeConfig;
    const kube = createKubeClient(kc);
    try {
      const first = await dispatcherOf(kc, sim);
      await kube.list('v1', 'Namespace');
      await writeFile(tokenFile, 'token-2');
      expect(await dispatcherOf(kc, sim)).toBe(first);
      expect(connections.dispatchersBuilt).toBe(1);

      await writeFile(certFile, 'cert-2');
      const second = await dispatcherOf(kc, sim);
      expect(second).not.toBe(first);
      expect(connections.dispatchersBuilt).toBe(2);
      // The old pool takes no new requests and lets its idle connection go.
      await expect.poll(() => (first as { closed: boolean }).closed, poll).toBe(true);
      await kube.list('v1', 'Namespace');
      expect(await dispatcherOf(kc, sim)).toBe(second);
    } finally {
      await connections.close();
    }
  });

  it('leaves the KubeConfig it was given as it was', async () => {
    const source = new KubeConfig();
    source.loadFromString(sim.kubeconfig());
    const connections = new KubeConnections(source);
    expect(await dispatcherOf(connections.kubeConfig, sim)).toBe(
      await dispatcherOf(connections.kubeConfig, sim),
    );
    // The source keeps client-node's own behaviour: a new dispatcher per request.
    expect(await dispatcherOf(source, sim)).not.toBe(await dispatcherOf(source, sim));
    expect(connections.kubeConfig.getCurrentCluster()?.server).toBe(sim.url);
    await connections.close();
  });
});
