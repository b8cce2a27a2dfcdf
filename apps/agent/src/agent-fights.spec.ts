import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AgentHarness, loadFixture, pollOptions as poll } from './testing/agent-harness.js';

const manifests = loadFixture('bundle-web.yaml');

// The agent against kube-sim with real client-node: heals made right after a break-glass ends
// revert the incident's manual changes and must not count towards a fight.
describe('agent: fight detection around a break-glass', () => {
  let h: AgentHarness;
  let digest: string;
  beforeAll(async () => {
    h = await AgentHarness.start('fights');
    digest = h.hub.addBundle(manifests);
  });
  afterAll(async () => {
    await h.stop();
  });

  /** A person's `kubectl edit` of the replicas, then the agent's heal of it (the n-th so far). */
  async function editAndHeal(replicas: number, heals: number): Promise<void> {
    await h.edit('Deployment', 'web', { spec: { replicas } });
    await expect.poll(() => h.drifts('healed').length, poll).toBe(heals);
    await expect.poll(() => h.replicas(), poll).toBe(2);
  }

  it('counts afresh once the override leaves the assignment, and still catches a fight after it', async () => {
    h.hub.setAssignments([h.assignment({ bundleDigest: digest })]);
    await h.runAgent();
    await expect.poll(() => h.syncs().length, poll).toBe(1);
    expect(h.syncs()[0]).toMatchObject({ outcome: 'Succeeded' });

    // Two identical rounds by the same manager: one short of a fight (threshold 3).
    await editAndHeal(3, 1);
    await editAndHeal(4, 2);

    // The incident: self-heal paused, the same manager scales by hand, the change is tolerated.
    h.hub.setAssignments([
      h.assignment({
        bundleDigest: digest,
        breakGlass: [
          {
            id: 'bg-9',
            reason: 'incident 9',
            expiresAt: '2030-01-01T00:00:00Z',
            allowSyncOutsideWindows: false,
            pauseSelfHeal: true,
          },
        ],
      }),
    ]);
    await expect.poll(() => h.hub.acknowledged(), poll).toBe(true);
    await h.edit('Deployment', 'web', { spec: { replicas: 7 } });
    await expect.poll(() => h.drifts('tolerated').length, poll).toBe(1);
    expect(await h.replicas()).toBe(7);

    // The override is closed: the manual scale is healed, as a first round, not the third.
    h.hub.setAssignments([h.assignment({ bundleDigest: digest })]);
    await expect.poll(() => h.drifts('healed').length, poll).toBe(3);
    expect(h.drifts('contested')).toEqual([]);
    await expect.poll(() => h.replicas(), poll).toBe(2);

    // A real tug of war afterwards is still stopped on its third round.
    await editAndHeal(5, 4);
    await h.edit('Deployment', 'web', { spec: { replicas: 6 } });
    await expect.poll(() => h.drifts('contested').length, poll).toBe(1);
    expect(h.drifts('contested')[0]).toMatchObject({
      resource: { kind: 'Deployment', name: 'web' },
      paths: ['/spec/replicas'],
      manager: 'kubectl-edit',
    });
    expect(h.drifts('healed')).toHaveLength(4);
    expect(await h.replicas()).toBe(6);
  });
});
