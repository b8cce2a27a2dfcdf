import { afterAll, describe, expect, it } from 'vitest';
import { startSimCluster, type SimClusterHandle } from '../cluster.js';
import { VERSION_INFO, versionInfo } from './discovery.js';

describe('/version', () => {
  const started: SimClusterHandle[] = [];
  afterAll(async () => {
    await Promise.all(started.map((c) => c.stop()));
  });

  it('answers the version a cluster is started with, and kube-sim’s own by default', async () => {
    const old = await startSimCluster({ name: 'old', kubernetesVersion: 'v1.30.4' });
    const plain = await startSimCluster({ name: 'plain' });
    started.push(old, plain);
    const read = async (c: SimClusterHandle) =>
      (await fetch(`${c.url}/version`)).json() as Promise<typeof VERSION_INFO>;
    expect(await read(old)).toMatchObject({ major: '1', minor: '30', gitVersion: 'v1.30.4' });
    expect(await read(plain)).toEqual(VERSION_INFO);
  });

  it('refuses a version that is not vMAJOR.MINOR.PATCH', () => {
    expect(() => versionInfo('1.30')).toThrow('kubernetesVersion must look like v1.30.4, not "1.30"');
  });
});
