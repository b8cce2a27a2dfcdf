import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestHub } from '@flotilla/hub/testing';
import { ADMIN_TOKEN, startSecureHub } from './security-hub.js';

// `flotilla tokens` (the built CLI, as people run it) against a real hub.

const CLI = join(import.meta.dirname, '../../apps/cli/dist/main.js');
const exec = promisify(execFile);

async function flotilla(args: string[], token: string): Promise<{ code: number; out: string; err: string }> {
  try {
    const { stdout, stderr } = await exec(process.execPath, [CLI, ...args], {
      env: { ...process.env, FLOTILLA_HUB_URL: hub.url, FLOTILLA_TOKEN: token },
      timeout: 30_000,
    });
    return { code: 0, out: stdout, err: stderr };
  } catch (e) {
    const failed = e as { code?: number; stdout?: string; stderr?: string };
    return { code: failed.code ?? -1, out: failed.stdout ?? '', err: failed.stderr ?? '' };
  }
}

let hub: TestHub;

describe('flotilla tokens against a hub', () => {
  beforeAll(async () => {
    hub = await startSecureHub();
  }, 120_000);

  afterAll(async () => {
    await hub?.close();
  }, 60_000);

  it('creates a token shown once, lists it without the secret, and revokes it', async () => {
    const created = await flotilla(
      ['tokens', 'create', 'ci-bot', '--role', 'operator', '--expires-in-days', '30'],
      ADMIN_TOKEN,
    );
    expect(created.code).toBe(0);
    expect(created.out).toMatch(/^Created API token ci-bot \(operator, expires \d{4}-.*\)\./);
    const secret = /^\s+(flp_\S+)$/m.exec(created.out)?.[1] ?? '';
    expect(secret).toMatch(/^flp_/);

    const listed = await flotilla(['tokens', 'list', '-o', 'json'], ADMIN_TOKEN);
    expect(JSON.parse(listed.out)).toEqual([
      expect.objectContaining({ name: 'ci-bot', role: 'operator', createdBy: 'user:admin', revokedAt: null }),
    ]);
    expect(listed.out).not.toContain('flp_');

    // The operator token reads clusters, but may not manage tokens: exit 1 with the hub's reason.
    expect((await flotilla(['clusters', 'list'], secret)).code).toBe(0);
    const denied = await flotilla(['tokens', 'list'], secret);
    expect(denied.code).toBe(1);
    expect(denied.err).toContain('token:ci-bot has the operator role; GET /api/v1/tokens needs admin');

    const revoked = await flotilla(['tokens', 'revoke', 'ci-bot'], ADMIN_TOKEN);
    expect(revoked.code).toBe(0);
    expect(revoked.out).toBe('Revoked API token ci-bot; the hub refuses it from now on.\n');
    expect((await flotilla(['tokens', 'list'], ADMIN_TOKEN)).out).toMatch(/ci-bot\s+operator\s+revoked/);
    const refused = await flotilla(['clusters', 'list'], secret);
    expect(refused.code).toBe(1);
    expect(refused.err).toContain('token-revoked');
  });
});
