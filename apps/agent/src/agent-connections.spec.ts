import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type KubeObject } from '@flotilla/contract';
import { AgentHarness, loadFixture, pollOptions as poll } from './testing/agent-harness.js';

/** The web app plus 60 ConfigMaps: one sync is well over a hundred API requests. */
const manifests: KubeObject[] = [
  ...loadFixture('bundle-web.yaml'),
  ...Array.from({ length: 60 }, (_, i) => ({
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name: `settings-${i}` },
    data: { release: 'r1', index: String(i) },
  })),
];

describe('agent: connections to the API server', () => {
  let h: AgentHarness;
  beforeAll(async () => {
    h = await AgentHarness.start('conns');
  });
  afterAll(async () => {
    await h.stop();
  });

  it('syncs 63 objects, watches them and heals drift over a handful of connections', async () => {
    // Only the agent talks to the cluster over HTTP here: the drift below is written through the
    // simulator's own API, so every accepted connection is the agent's.
    const before = h.sim.acceptedConnections();
    const digest = h.hub.addBundle(manifests);
    h.hub.setAssignments([h.assignment({ bundleDigest: digest })]);
    await h.runAgent();
    await expect.poll(() => h.syncs().length, poll).toBe(1);
    expect(h.syncs()[0]?.outcome).toBe('Succeeded');
    expect(h.syncs()[0]?.resources).toHaveLength(63);
    await expect.poll(() => h.hub.reportsOf('health').at(-1)?.status, poll).toBe('Healthy');

    const configMaps = h.sim.api.rt('', 'v1', 'configmaps');
    for (let i = 0; i < 5; i++) {
      h.sim.api.patch(
        configMaps,
        'shop',
        `settings-${i * 10}`,
        'merge',
        { data: { release: 'drifted' } },
        {
          manager: 'kubectl-edit',
        },
      );
      await expect.poll(() => h.drifts('healed').length, poll).toBe(i + 1);
    }
    for (let i = 0; i < 5; i++) {
      expect(h.sim.api.get(configMaps, 'shop', `settings-${i * 10}`)['data']).toMatchObject({
        release: 'r1',
      });
    }

    // Over 130 requests (discovery, a read and an apply per object, the watches' lists, five heals)
    // and three watches; client-node alone would have opened one connection per request.
    const opened = h.sim.acceptedConnections() - before;
    expect(opened).toBeGreaterThanOrEqual(3);
    expect(opened).toBeLessThanOrEqual(10);
  });
});
