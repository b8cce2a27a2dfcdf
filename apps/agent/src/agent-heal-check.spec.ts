import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type KubeObject } from '@flotilla/contract';
import { AgentHarness, loadFixture, pollOptions as poll } from './testing/agent-harness.js';

const manifests: KubeObject[] = loadFixture('bundle-web.yaml').map((m) =>
  m.kind === 'Deployment' ? { ...m, metadata: { ...m.metadata, annotations: { team: 'web' } } } : m,
);

describe('agent: "healed" is said only after a fresh look (#14 defect 10)', () => {
  let h: AgentHarness;
  beforeAll(async () => {
    h = await AgentHarness.start('healcheck');
  });
  afterAll(async () => {
    await h.stop();
  });

  it('a heal a mutating webhook undoes at once is not Healed, and the endless round is a fight', async () => {
    h.hub.setAssignments([h.assignment({ bundleDigest: h.hub.addBundle(manifests) })]);
    await h.runAgent();
    await expect.poll(() => h.syncs().length, poll).toBe(1);
    await expect.poll(() => h.hub.reportsOf('health').at(-1)?.status, poll).toBe('Healthy');

    // From now on every write of the Deployment, the agent's heal too, comes out team=platform.
    h.sim.writers.webhook = { annotation: ['team', 'platform'] };
    try {
      await h.edit('Deployment', 'web', { spec: { replicas: 9 } });
      await expect.poll(() => h.drifts('contested').length, poll).toBe(1);
    } finally {
      delete h.sim.writers.webhook;
    }
    expect(h.drifts('contested')[0]).toMatchObject({
      resource: { kind: 'Deployment', name: 'web' },
      paths: ['/metadata/annotations/team'],
    });
    // Each round put replicas back, but the object never matched Git: no round was reported healed.
    expect(h.drifts('healed')).toEqual([]);
    expect(await h.replicas()).toBe(2);
  });
});
