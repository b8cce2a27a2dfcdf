import { readFile, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { AGENT_API, type Report } from '@flotilla/contract';
import { AgentHarness, loadFixture, pollOptions as poll } from './testing/agent-harness.js';

const manifests = loadFixture('bundle-web.yaml');

/** The reports set aside in the agent's state dir, by id. */
async function setAside(h: AgentHarness): Promise<{ code: string; reports: Report[] }[]> {
  const dir = join(h.dir, 'state', 'reports-refused');
  const files = (await readdir(dir).catch(() => [])).filter((f) => f.endsWith('.json'));
  return Promise.all(
    files.map(
      async (f) => JSON.parse(await readFile(join(dir, f), 'utf8')) as { code: string; reports: Report[] },
    ),
  );
}

describe('agent: reports are set aside only when the hub refused them as invalid (#14 defect 6)', () => {
  let h: AgentHarness;
  beforeEach(async () => {
    h = await AgentHarness.start();
  });
  afterEach(async () => {
    await h.stop();
  });

  it('keeps every report through 404, 413, 503 and 401 answers from an ingress, then delivers each once', async () => {
    for (const status of [404, 413, 503, 401, 404, 413])
      h.hub.proxyAnswers.push({ status, path: AGENT_API.reports });
    const digest = h.hub.addBundle(manifests);
    h.hub.setAssignments([h.assignment({ bundleDigest: digest })]);
    await h.runAgent();
    await expect.poll(() => h.hub.proxyAnswers.length, poll).toBe(0);
    await expect.poll(() => h.syncs().length, poll).toBe(1);
    await expect.poll(() => h.hub.reportsOf('health').at(-1)?.status, poll).toBe('Healthy');
    expect([...h.hub.receipts.values()].every((n) => n === 1)).toBe(true);
    expect(await setAside(h)).toEqual([]);
  });

  it('sets aside the one report the hub refuses as invalid, with its reason; the others arrive once', async () => {
    const digest = h.hub.addBundle(manifests);
    h.hub.setAssignments([h.assignment({ bundleDigest: digest })]);
    await h.runAgent();
    await expect.poll(() => h.syncs().length, poll).toBe(1);

    h.hub.invalidReport = (r) => r.type === 'sync' && r.revision === 'rev-2';
    const next = h.hub.addBundle(manifests.filter((m) => m.kind !== 'ConfigMap'));
    h.hub.setAssignments([h.assignment({ bundleDigest: next, revision: 'rev-2' })]);
    await expect.poll(async () => (await setAside(h)).length, poll).toBe(1);
    const [kept] = await setAside(h);
    expect(kept?.code).toBe('reports-invalid');
    expect(kept?.reports.map((r) => [r.type, r.type === 'sync' && r.revision])).toEqual([['sync', 'rev-2']]);
    expect(h.hub.receipts.has(kept?.reports[0]?.id ?? '')).toBe(false);

    // Reports made after it are not held back, and nothing arrives twice.
    h.hub.invalidReport = undefined;
    h.hub.setAssignments([h.assignment({ bundleDigest: digest, revision: 'rev-3' })]);
    await expect.poll(() => h.syncs().at(-1)?.revision, poll).toBe('rev-3');
    expect([...h.hub.receipts.values()].every((n) => n === 1)).toBe(true);
  });

  it('sets aside a report the hub lists as refused in its 200 answer', async () => {
    h.hub.unstorableReport = (r) => r.type === 'sync';
    const digest = h.hub.addBundle(manifests);
    h.hub.setAssignments([h.assignment({ bundleDigest: digest })]);
    await h.runAgent();
    await expect.poll(async () => (await setAside(h)).length, poll).toBe(1);
    const [kept] = await setAside(h);
    expect(kept?.code).toBe('invalid-text');
    expect(kept?.reports.map((r) => r.type)).toEqual(['sync']);
    await expect.poll(() => h.hub.reportsOf('health').at(-1)?.status, poll).toBe('Healthy');
    expect(h.syncs()).toEqual([]);
  });
});
