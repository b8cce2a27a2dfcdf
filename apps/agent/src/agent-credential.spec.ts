import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { AGENT_REFUSAL } from '@flotilla/contract';
import { AgentHarness, loadFixture, pollOptions as poll } from './testing/agent-harness.js';

const manifests = loadFixture('bundle-web.yaml');

/** What the agent has on disk as its credential. */
async function storedCredential(h: AgentHarness): Promise<string | undefined> {
  try {
    const raw = await readFile(join(h.dir, 'state', 'credential.json'), 'utf8');
    return (JSON.parse(raw) as { credential: string }).credential;
  } catch {
    return undefined;
  }
}

describe('agent: its credential is dropped only when the hub says it is gone (#14 defect 3)', () => {
  let h: AgentHarness;
  beforeEach(async () => {
    h = await AgentHarness.start();
    h.hub.singleUseBootstrap = true;
    const digest = h.hub.addBundle(manifests);
    h.hub.setAssignments([h.assignment({ bundleDigest: digest })]);
    await h.runAgent();
    await expect.poll(() => h.syncs().length, poll).toBe(1);
  });
  afterEach(async () => {
    await h.stop();
  });

  it('keeps its credential through 401s and 403s from a proxy, and carries on with it', async () => {
    const before = await storedCredential(h);
    expect(before).toMatch(/^cred-/);
    for (const status of [401, 403, 401, 403, 401, 403])
      h.hub.proxyAnswers.push({ status, path: '/api/agent/v1/assignments' });
    await expect.poll(() => h.hub.proxyAnswers.length, poll).toBe(0);

    // The hub still hands it new work, and it still reports with the same credential.
    const digest = h.hub.addBundle(manifests.filter((m) => m.kind !== 'ConfigMap'));
    h.hub.setAssignments([h.assignment({ bundleDigest: digest, revision: 'rev-2' })]);
    await expect.poll(() => h.syncs().at(-1)?.revision, poll).toBe('rev-2');
    expect(await storedCredential(h)).toBe(before);
    expect(h.hub.registerAttempts).toBe(1);
  });

  it('registers again with its bootstrap token once the hub says the credential was revoked', async () => {
    const before = await storedCredential(h);
    h.hub.singleUseBootstrap = false;
    h.hub.refuseCredential(AGENT_REFUSAL.credentialRevoked);
    await expect.poll(() => h.hub.registrations, poll).toBe(2);
    await expect.poll(() => storedCredential(h), poll).not.toBe(before);

    const digest = h.hub.addBundle(manifests.filter((m) => m.kind !== 'ConfigMap'));
    h.hub.setAssignments([h.assignment({ bundleDigest: digest, revision: 'rev-2' })]);
    await expect.poll(() => h.syncs().at(-1)?.revision, poll).toBe('rev-2');
  });

  it('keeps the old credential on disk while its spent bootstrap token is refused, and retries both', async () => {
    const before = await storedCredential(h);
    h.hub.refuseCredential(AGENT_REFUSAL.credentialRotated);
    // Every try: the stored credential (refused, typed), then the bootstrap token (refused: used).
    await expect.poll(() => h.hub.registerAttempts, poll).toBeGreaterThanOrEqual(3);
    expect(h.hub.registrations).toBe(1);
    expect(await storedCredential(h)).toBe(before);
  });

  it('answers with its typed codes only: a bare 401 on register is not taken for one', async () => {
    h.hub.refuseCredential(AGENT_REFUSAL.credentialExpired);
    h.hub.singleUseBootstrap = false;
    h.hub.proxyAnswers.push({ status: 401, path: '/api/agent/v1/register' });
    // The proxy's 401 on register is retried; the second attempt gets a new credential.
    await expect.poll(() => h.hub.registrations, poll).toBe(2);
    expect(h.hub.registerAttempts).toBeGreaterThanOrEqual(2);
  });
});
