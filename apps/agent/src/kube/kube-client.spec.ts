import { createServer } from 'node:net';
import { KubeConfig } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type KubeObject } from '@flotilla/contract';
import { kubeconfigFor, type SimClusterHandle, startSimCluster } from '@flotilla/kube-sim';
import { createKubeClient, idOf, KubeApiError } from './kube-client.js';

const configMap: KubeObject = {
  apiVersion: 'v1',
  kind: 'ConfigMap',
  metadata: { name: 'settings', namespace: 'default' },
  data: { release: 'r1' },
};

/** A port nothing listens on: taken, then given back. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

describe('the agent’s Kubernetes client over undici’s request()', () => {
  let sim: SimClusterHandle;
  beforeAll(async () => {
    sim = await startSimCluster({ name: 'client' });
  });
  afterAll(async () => {
    await sim.stop();
  });

  const client = () => {
    const kc = new KubeConfig();
    kc.loadFromString(sim.kubeconfig());
    return createKubeClient(kc);
  };

  it('applies, reads back and deletes; a missing object reads as undefined', async () => {
    const kube = client();
    expect(await kube.get(idOf(configMap))).toBeUndefined();
    const applied = await kube.apply(configMap);
    expect(applied.data).toEqual({ release: 'r1' });
    expect((await kube.get(idOf(configMap)))?.metadata.resourceVersion).toBe(
      applied.metadata.resourceVersion,
    );
    expect(await kube.delete(idOf(configMap))).toBe(true);
    expect(await kube.delete(idOf(configMap))).toBe(false);
  });

  it('turns a refusal into a KubeApiError with the status, the reason and the server’s message', async () => {
    const kube = client();
    const bad = { ...configMap, metadata: { name: 'Not_A_Name', namespace: 'default' } };
    const err = (await kube.apply(bad).catch((e: unknown) => e)) as KubeApiError;
    expect(err).toBeInstanceOf(KubeApiError);
    expect(err.status).toBe(422);
    expect(err.reason).toBe('Invalid');
    expect(err.message).toContain('Not_A_Name');
  });

  it('says an API server that does not answer is unreachable, with the cause', async () => {
    const kc = new KubeConfig();
    kc.loadFromString(kubeconfigFor('gone', `http://127.0.0.1:${await closedPort()}`));
    const kube = createKubeClient(kc);
    // Discovery is the first call a read makes.
    const err = (await kube.get(idOf(configMap)).catch((e: unknown) => e)) as KubeApiError;
    expect(err).toBeInstanceOf(KubeApiError);
    expect(err.status).toBeUndefined();
    expect(err.reason).toBe('Unreachable');
    expect(err.message).toContain('ECONNREFUSED');
  });
});
