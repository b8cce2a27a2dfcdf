import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AgentHarness, loadFixture, pollOptions } from './testing/agent-harness.js';

const manifests = loadFixture('bundle-web.yaml');
const poll = { ...pollOptions, timeout: 30_000 };

/**
 * Issue #17, seen by a new user: a break-glass that paused self-heal was closed while a deny window
 * was active; the manual change must be healed once the window allows it, and until then what the
 * agent reports must name the window that holds the heal.
 */
describe('agent: a break-glass closed inside a deny window', () => {
  let h: AgentHarness;
  let digest: string;
  // The agent's clock starts at 09:59:55; the freeze runs 10:00:00-10:00:10 and 10:01:00-10:01:10.
  const freeze = {
    name: 'eu-night-freeze',
    kind: 'deny' as const,
    schedule: '0,1 10 * * *',
    duration: '10s',
    clusters: ['*'],
  };
  const pause = {
    id: 'bg-7',
    reason: 'incident 7',
    expiresAt: '2030-01-01T00:00:00Z',
    allowSyncOutsideWindows: false,
    pauseSelfHeal: true,
  };
  const offset = Date.parse('2026-06-01T09:59:55.000Z') - Date.now();
  const clockPast = (iso: string) =>
    expect.poll(() => Date.now() + offset >= Date.parse(iso), { ...poll, timeout: 70_000 }).toBe(true);
  const heldHeals = () => h.syncs().filter((s) => s.outcome === 'Blocked' && s.trigger === 'self-heal');
  beforeAll(async () => {
    h = await AgentHarness.start('north');
    digest = h.hub.addBundle(manifests);
  });
  afterAll(async () => {
    await h.stop();
  });

  it('says which window holds a heal, and heals when it opens', async () => {
    h.hub.setAssignments([h.assignment({ bundleDigest: digest, windows: [freeze] })]);
    await h.runAgent({ now: () => new Date(Date.now() + offset) });
    await expect.poll(() => h.syncs().length, poll).toBe(1);
    expect(h.syncs()[0]).toMatchObject({ trigger: 'auto', outcome: 'Succeeded' });

    await clockPast('2026-06-01T10:00:01Z');
    await h.edit('Deployment', 'web', { spec: { replicas: 6 } });
    await expect.poll(() => heldHeals().length, poll).toBe(1);
    expect(heldHeals()[0]?.message).toBe('blocked by window eu-night-freeze until 2026-06-01T10:00:10.000Z');
    await expect.poll(() => h.drifts('healed').length, poll).toBe(1);
    expect(await h.replicas()).toBe(2);
  }, 60_000);

  it('heals the change made under a break-glass closed inside the window once it opens, and says why it waits', async () => {
    h.hub.setAssignments([h.assignment({ bundleDigest: digest, windows: [freeze], breakGlass: [pause] })]);
    await expect.poll(() => h.hub.acknowledged(), poll).toBe(true);
    await h.edit('Deployment', 'web', { spec: { replicas: 7 } });
    await expect.poll(() => h.drifts('tolerated').length, poll).toBe(1);

    await clockPast('2026-06-01T10:01:01Z');
    h.hub.setAssignments([h.assignment({ bundleDigest: digest, windows: [freeze] })]);
    // Held again by the same window for the same revision: a new hold, told again.
    await expect.poll(() => heldHeals().length, poll).toBe(2);
    expect(heldHeals()[1]?.message).toBe('blocked by window eu-night-freeze until 2026-06-01T10:01:10.000Z');
    expect(await h.replicas()).toBe(7);

    await expect.poll(() => h.drifts('healed').length, poll).toBe(2);
    expect(await h.replicas()).toBe(2);
    expect(Date.now() + offset).toBeGreaterThanOrEqual(Date.parse('2026-06-01T10:01:10Z'));
  }, 150_000);
});
