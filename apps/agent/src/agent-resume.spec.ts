import { readFile, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ReportBatch } from '@flotilla/contract';
import { AgentHarness, loadFixture, pollOptions as poll } from './testing/agent-harness.js';

const manifests = loadFixture('bundle-web.yaml');

describe('agent: resuming from disk while the hub is away', () => {
  let h: AgentHarness;
  beforeAll(async () => {
    h = await AgentHarness.start('west');
  });
  afterAll(async () => {
    await h.stop();
  });

  it('refuses a bundle whose content does not match its digest and fetches it again', async () => {
    const digest = h.hub.addBundle(manifests);
    h.hub.tamperOnce(digest);
    h.hub.setAssignments([h.assignment({ bundleDigest: digest })]);
    const agent = await h.runAgent();
    await expect.poll(() => h.syncs().length, poll).toBe(1);
    expect(h.syncs()[0]?.outcome).toBe('Succeeded');
    expect(h.hub.bundleFetches.get(digest)).toBe(2);
    // The object only the tampered copy declared was never applied.
    expect(await h.read('ConfigMap', 'injected')).toBeUndefined();
    await agent.stop();
  });

  it('a restarted agent heals from its on-disk state and later delivers every queued report once', async () => {
    const stateDir = join(h.dir, 'state');
    await h.hub.stop();
    // The first agent's stop aborted its post in flight: a batch the hub may have read stays on disk
    // and is sent again (the hub keeps a report once, by id). Only those can arrive twice.
    const receivedBefore = new Set(h.hub.receipts.keys());
    await h.runAgent({ stateDir });

    await h.edit('Deployment', 'web', { spec: { replicas: 9 } });
    await expect.poll(() => h.replicas(), poll).toBe(2);

    // Everything the second agent said is still on its disk, in batch files.
    const reportsDir = join(stateDir, 'reports');
    const queued = new Map<string, string>();
    await expect
      .poll(async () => {
        for (const file of await readdir(reportsDir)) {
          if (!file.endsWith('.json')) continue;
          const batch = JSON.parse(await readFile(join(reportsDir, file), 'utf8')) as ReportBatch;
          for (const r of batch.reports) queued.set(r.id, r.type === 'drift' ? `drift:${r.state}` : r.type);
        }
        return [...queued.values()];
      }, poll)
      .toEqual(expect.arrayContaining(['drift:detected', 'sync', 'drift:healed']));
    const before = h.hub.reports.length;

    await h.hub.start();
    await expect.poll(() => [...queued.keys()].every((id) => h.hub.receipts.has(id)), poll).toBe(true);
    const whileAway = [...queued.keys()].filter((id) => !receivedBefore.has(id));
    expect(whileAway.length).toBeGreaterThanOrEqual(3);
    expect(whileAway.map((id) => h.hub.receipts.get(id))).toEqual(whileAway.map(() => 1));
    for (const id of queued.keys()) expect(h.hub.reports.filter((r) => r.id === id)).toHaveLength(1);
    const delivered = h.hub.reports.slice(before);
    const healed = delivered.find((r) => r.type === 'drift' && r.state === 'healed');
    expect(healed).toMatchObject({
      resource: { kind: 'Deployment', name: 'web' },
      paths: ['/spec/replicas'],
    });
    // The stored credential was reused: no second registration.
    expect(h.hub.registrations).toBe(1);
    await expect
      .poll(async () => (await readdir(reportsDir)).filter((f) => f.endsWith('.json')), poll)
      .toEqual([]);
  });

  it("retries a sync that failed while the API server was down, with the server's message", async () => {
    const changed = manifests.map((m) =>
      m.kind === 'ConfigMap' ? { ...m, data: { greeting: 'hello again' } } : m,
    );
    const digest = h.hub.addBundle(changed);
    const before = h.syncs().length;
    h.sim.faults.failAll = 503;
    try {
      h.hub.setAssignments([h.assignment({ bundleDigest: digest, revision: 'rev-2' })]);
      await expect
        .poll(
          () =>
            h
              .syncs()
              .slice(before)
              .map((s) => s.outcome),
          poll,
        )
        .toContain('Failed');
    } finally {
      delete h.sim.faults.failAll;
    }
    const failed = h
      .syncs()
      .slice(before)
      .find((s) => s.outcome === 'Failed');
    expect(failed?.resources.length).toBeGreaterThan(0);
    expect(failed?.resources.every((r) => r.action === 'failed' && r.message !== '')).toBe(true);

    await expect.poll(() => h.syncs().at(-1)?.outcome, poll).toBe('Succeeded');
    expect(h.syncs().at(-1)?.revision).toBe('rev-2');
    expect((await h.read('ConfigMap', 'web-config')) as unknown).toMatchObject({
      data: { greeting: 'hello again' },
    });

    // The watches broke during the outage; they come back and drift is healed again.
    const healed = h.drifts('healed').length;
    await h.edit('Deployment', 'web', { spec: { replicas: 3 } });
    await expect.poll(() => h.drifts('healed').length, poll).toBe(healed + 1);
    expect(await h.replicas()).toBe(2);
  });
});
