import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CLIENT_SIDE_APPLY_FIELD_MANAGER } from '@flotilla/contract';
import { AgentHarness, loadFixture, pollOptions as poll } from './testing/agent-harness.js';

const LAST_APPLIED = 'kubectl.kubernetes.io/last-applied-configuration';

/** A target with ServerSideApply=false, run by the agent: synced, watched and healed client-side (#14). */
describe('agent: a client-side applied target is watched and healed', () => {
  let h: AgentHarness;
  beforeAll(async () => {
    h = await AgentHarness.start();
  });
  afterAll(async () => {
    await h.stop();
  });

  it('heals a hand edit with a client-side patch, keeping a label someone added', async () => {
    const digest = h.hub.addBundle(loadFixture('bundle-web.yaml'));
    h.hub.setAssignments([
      h.assignment({
        bundleDigest: digest,
        syncPolicy: { automated: true, selfHeal: true, prune: true, serverSideApply: false },
      }),
    ]);
    await h.runAgent();
    await expect.poll(() => h.syncs().at(-1)?.outcome, poll).toBe('Succeeded');
    const synced = await h.read('Deployment', 'web');
    expect(synced?.metadata.annotations).toHaveProperty([LAST_APPLIED]);

    // Not declared and never applied: not drift, and no heal takes it away.
    await h.edit('Deployment', 'web', { metadata: { labels: { owner: 'ops' } } }, 'kubectl-label');
    await h.edit('Deployment', 'web', { spec: { replicas: 7 } });
    await expect.poll(() => h.drifts('healed').length, poll).toBe(1);
    expect(h.drifts('detected').map((d) => d.paths)).toEqual([['/spec/replicas']]);
    expect(h.drifts('detected')[0]?.manager).toBe('kubectl-edit');
    expect(h.syncs().at(-1)).toMatchObject({ trigger: 'self-heal', outcome: 'Succeeded' });

    const healed = await h.read('Deployment', 'web');
    expect(healed?.['spec']).toMatchObject({ replicas: 2 });
    expect(healed?.metadata.labels).toMatchObject({ app: 'web', tier: 'front', owner: 'ops' });
    const managers = (healed?.metadata['managedFields'] as { manager: string; operation: string }[]).map(
      (m) => `${m.manager}:${m.operation}`,
    );
    expect(managers).toContain(`${CLIENT_SIDE_APPLY_FIELD_MANAGER}:Update`);
    expect(managers.filter((m) => m.endsWith(':Apply'))).toEqual([]);
  });
});
