import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CreatedApiToken } from '@flotilla/contract';
import { waitForIdleQueues, type TestHub } from '@flotilla/hub/testing';
import { ADMIN_TOKEN, caller, sql, startSecureHub, tableCounts, type Refusal } from './security-hub.js';

// People's credentials on a real hub: the admin token, API tokens and roles. Every refusal is checked
// for its status, its code and a message a person can act on, and for having changed nothing.

let hub: TestHub;
let call: ReturnType<typeof caller>;
const secrets: Record<string, string> = {};

async function createToken(name: string, role: string): Promise<string> {
  const r = await call<CreatedApiToken>('POST', '/api/v1/tokens', { body: { name, role } });
  expect(r.status).toBe(201);
  expect(r.body.secret).toMatch(/^flp_/);
  return r.body.secret;
}

describe('people API authentication and roles', () => {
  beforeAll(async () => {
    hub = await startSecureHub({ RATE_LIMIT_PEOPLE_PER_MINUTE: '1000', API_BODY_LIMIT_BYTES: '4096' });
    call = caller(hub);
    secrets['viewer'] = await createToken('alice-viewer', 'viewer');
    secrets['operator'] = await createToken('bob-operator', 'operator');
    secrets['admin'] = await createToken('carol-admin', 'admin');
    const repo = await call('POST', '/api/v1/repositories', {
      body: { url: 'https://git.invalid/fleet.git' },
    });
    expect(repo.status).toBe(201);
    await waitForIdleQueues(hub.app); // its first fetch (which fails: git.invalid) is audited
  }, 120_000);

  afterAll(async () => {
    await hub?.close();
  }, 60_000);

  it('lists tokens without their secrets and records who created them', async () => {
    const r = await call<Record<string, unknown>[]>('GET', '/api/v1/tokens');
    expect(r.status).toBe(200);
    expect(r.body.map((t) => [t['name'], t['role'], t['createdBy']])).toEqual([
      ['alice-viewer', 'viewer', 'user:admin'],
      ['bob-operator', 'operator', 'user:admin'],
      ['carol-admin', 'admin', 'user:admin'],
    ]);
    expect(JSON.stringify(r.body)).not.toContain('flp_');
    const stored = await sql(hub, 'SELECT "tokenHash" FROM "ApiToken"');
    for (const row of stored) expect(Object.values(secrets)).not.toContain(row['tokenHash']);
  });

  it('refuses a missing, malformed or forged token with 401 and changes nothing', async () => {
    const before = await tableCounts(hub);
    const attempts: [string | null, Record<string, string>?][] = [
      [null],
      [null, { authorization: `Basic ${Buffer.from('admin:admin').toString('base64')}` }],
      ['flp_forged-token-that-was-never-issued-by-this-hub'],
      [`${ADMIN_TOKEN}x`],
    ];
    for (const [token, headers] of attempts) {
      const r = await call<Refusal>('POST', '/api/v1/clusters', {
        body: { name: 'forged' },
        token,
        ...(headers && { headers }),
      });
      expect(r.status).toBe(401);
      expect(r.body.code).toBe('unauthorized');
      expect(r.body.message).toMatch(/Bearer|token/);
    }
    expect(await tableCounts(hub)).toEqual(before);
  });

  it('lets a viewer read but not sync (403 naming the role needed), and changes nothing', async () => {
    const read = await call('GET', '/api/v1/clusters', { token: secrets['viewer'] });
    expect(read.status).toBe(200);
    const repos = await call<{ id: string }[]>('GET', '/api/v1/repositories', { token: secrets['viewer'] });
    const before = await tableCounts(hub);
    const sync = await call<Refusal>('POST', `/api/v1/repositories/${repos.body[0]?.id}/refresh`, {
      token: secrets['viewer'],
    });
    expect(sync.status).toBe(403);
    expect(sync.body.code).toBe('forbidden');
    expect(sync.body.message).toMatch(
      /^token:alice-viewer has the viewer role; POST .*\/refresh needs operator$/,
    );
    expect(await tableCounts(hub)).toEqual(before);
  });

  it('lets an operator sync but not administer; undecorated mutations default to admin', async () => {
    const repos = await call<{ id: string }[]>('GET', '/api/v1/repositories', { token: secrets['operator'] });
    const sync = await call('POST', `/api/v1/repositories/${repos.body[0]?.id}/refresh`, {
      token: secrets['operator'],
    });
    expect(sync.status).toBe(202);
    await waitForIdleQueues(hub.app); // the fetch it queued records its own audit event
    const before = await tableCounts(hub);
    for (const [method, path, body] of [
      ['POST', '/api/v1/clusters', { name: 'by-operator' }],
      ['POST', '/api/v1/tokens', { name: 'self-promoted', role: 'admin' }],
      ['GET', '/api/v1/tokens', undefined],
      // Deleting a target takes its workloads out of a cluster: admin only.
      ['POST', '/api/v1/targets/web-eu-1/delete', { cascade: true, reason: 'by operator' }],
    ] as const) {
      const r = await call<Refusal>(method, path, { token: secrets['operator'], ...(body && { body }) });
      expect(r.status, `${method} ${path}`).toBe(403);
      expect(r.body.message).toContain('needs admin');
    }
    expect(await tableCounts(hub)).toEqual(before);
  });

  it('records the token identity as the audit actor', async () => {
    const r = await call('POST', '/api/v1/clusters', {
      body: { name: 'by-carol' },
      token: secrets['admin'],
      // Only the shared admin token may name its caller; an API token is its own identity.
      headers: { 'x-flotilla-actor': 'mallory' },
    });
    expect(r.status).toBe(201);
    const rows = await sql(
      hub,
      `SELECT actor FROM "AuditEvent" WHERE action = 'cluster.created' AND scope = $1`,
      ['cluster:by-carol'],
    );
    expect(rows).toEqual([{ actor: 'token:carol-admin' }]);
  });

  it('refuses an expired token (401 token-expired) and changes nothing', async () => {
    const secret = await createToken('expiring', 'admin');
    await sql(hub, `UPDATE "ApiToken" SET "expiresAt" = now() - interval '1 minute' WHERE name = 'expiring'`);
    const before = await tableCounts(hub);
    const r = await call<Refusal>('POST', '/api/v1/clusters', { body: { name: 'late' }, token: secret });
    expect(r.status).toBe(401);
    expect(r.body.code).toBe('token-expired');
    expect(r.body.message).toMatch(/^API token "expiring" expired at \d{4}-/);
    expect(await tableCounts(hub)).toEqual(before);
  });

  it('refuses a revoked token at once (401 token-revoked), and revoking is audited', async () => {
    const secret = await createToken('leaked', 'operator');
    expect((await call('GET', '/api/v1/clusters', { token: secret })).status).toBe(200);
    const revoke = await call<{ revokedAt: string | null }>('DELETE', '/api/v1/tokens/leaked');
    expect(revoke.status).toBe(200);
    expect(revoke.body.revokedAt).not.toBeNull();
    const before = await tableCounts(hub);
    const r = await call<Refusal>('GET', '/api/v1/clusters', { token: secret });
    expect(r.status).toBe(401);
    expect(r.body.code).toBe('token-revoked');
    expect(r.body.message).toContain('API token "leaked" was revoked at');
    expect(await tableCounts(hub)).toEqual(before);
    const audit = await sql(
      hub,
      `SELECT action, actor FROM "AuditEvent" WHERE scope = 'token:leaked' ORDER BY id`,
    );
    expect(audit).toEqual([
      { action: 'token.created', actor: 'user:admin' },
      { action: 'token.revoked', actor: 'user:admin' },
    ]);
  });

  it('validates token requests with field paths', async () => {
    const r = await call<Refusal>('POST', '/api/v1/tokens', { body: { name: 'Bad Name', role: 'root' } });
    expect(r.status).toBe(400);
    expect(r.body.code).toBe('invalid-request');
    expect(r.body.path).toBe('name');
    const dup = await call<Refusal>('POST', '/api/v1/tokens', {
      body: { name: 'alice-viewer', role: 'viewer' },
    });
    expect(dup.status).toBe(409);
  });

  it('refuses a body over the limit with 413 before reading it, and changes nothing', async () => {
    const before = await tableCounts(hub);
    const r = await call<Refusal>('POST', '/api/v1/clusters', {
      body: { name: 'huge', annotations: { blob: 'x'.repeat(10_000) } },
    });
    expect(r.status).toBe(413);
    expect(r.body).toEqual({
      code: 'payload-too-large',
      message: 'a request body is limited to 4096 bytes; this one is larger',
      requestId: expect.stringMatching(/^\S+$/) as string,
    });
    expect(await tableCounts(hub)).toEqual(before);
  });
});

describe('people API rate limit', () => {
  let limited: TestHub;

  beforeAll(async () => {
    limited = await startSecureHub({ RATE_LIMIT_PEOPLE_PER_MINUTE: '5' });
  }, 120_000);

  afterAll(async () => {
    await limited?.close();
  }, 60_000);

  it('answers 429 with Retry-After once a token has used its minute, other tokens unaffected', async () => {
    const call = caller(limited);
    const created = await call<CreatedApiToken>('POST', '/api/v1/tokens', {
      body: { name: 'ci', role: 'viewer' },
    });
    const ci = created.body.secret;
    // The window is one clock minute: near its end the count may restart once, so allow 2 × 5.
    let refused: Awaited<ReturnType<typeof call<Refusal>>> | undefined;
    for (let i = 0; i < 12 && !refused; i++) {
      const r = await call<Refusal>('GET', '/api/v1/clusters', { token: ci });
      if (r.status === 429) refused = r;
      else expect(r.status).toBe(200);
    }
    expect(refused?.body.code).toBe('rate-limited');
    expect(refused?.body.message).toMatch(
      /^token:ci made more than 5 requests this minute; retry after \d+ s$/,
    );
    const retryAfter = Number(refused?.headers.get('retry-after'));
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    expect(retryAfter).toBeLessThanOrEqual(60);
    // The limit is per credential: another token still gets through.
    const other = await call<CreatedApiToken>('POST', '/api/v1/tokens', {
      body: { name: 'other', role: 'viewer' },
    });
    expect(other.status).toBe(201);
    expect((await call('GET', '/api/v1/clusters', { token: other.body.secret })).status).toBe(200);
  });
});
