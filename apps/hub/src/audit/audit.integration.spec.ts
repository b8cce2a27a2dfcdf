import 'reflect-metadata';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestHub, type TestHub } from '../testing/index.js';
import type { AuditEventView, AuditVerifyView } from '@flotilla/contract';

// The real hub on real PostgreSQL: events come from real API calls, and tampering is done by hand in SQL.

let hub: TestHub;
let sql: pg.Client;

async function get<T>(path: string): Promise<{ status: number; body: T; text: string; type: string | null }> {
  const res = await fetch(`${hub.url}${path}`);
  const text = await res.text();
  const type = res.headers.get('content-type');
  return {
    status: res.status,
    text,
    type,
    body: (type?.startsWith('application/json') ? JSON.parse(text) : null) as T,
  };
}

// Full: these tests count every event and edit rows an earlier call (or the monitor) already verified.
const verify = async () => (await get<AuditVerifyView>('/api/v1/audit/verify?full=true')).body;
type Page = { items: AuditEventView[]; nextCursor: string | null };

/** Rows (in id order) grouped by chain lane. */
function byLane<T extends { lane: number }>(rows: T[]): Map<number, T[]> {
  const lanes = new Map<number, T[]>();
  for (const row of rows) lanes.set(row.lane, [...(lanes.get(row.lane) ?? []), row]);
  return lanes;
}

describe('audit log (real hub, PostgreSQL)', () => {
  beforeAll(async () => {
    hub = await startTestHub();
    sql = new pg.Client({ connectionString: hub.postgres.url });
    await sql.connect();
  }, 180_000);

  afterAll(async () => {
    await sql?.end();
    await hub?.close();
  }, 60_000);

  it('20 parallel cluster registrations, then an agent registration, a token and a revocation, form valid, unforked chains (one per lane)', async () => {
    const answers = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        fetch(`${hub.url}/api/v1/clusters`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ name: `c${i}`, labels: { note: 'a,"b"' } }),
        }),
      ),
    );
    expect(answers.map((a) => a.status)).toEqual(Array(20).fill(201));
    const { bootstrapToken } = (await answers[0]!.json()) as { bootstrapToken: string };
    const register = await fetch(`${hub.url}/api/agent/v1/register`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ clusterName: 'c0', bootstrapToken, agentVersion: 'test' }),
    });
    expect(register.ok).toBe(true);
    const token = await fetch(`${hub.url}/api/v1/clusters/c1/bootstrap-tokens`, { method: 'POST' });
    expect(token.ok).toBe(true);
    const revoke = await fetch(`${hub.url}/api/v1/clusters/c3/revoke-credential`, { method: 'POST' });
    expect(revoke.status).toBeLessThan(300);

    const { rows } = await sql.query<{ prevHash: string; hash: string; lane: number }>(
      'SELECT "prevHash", "hash", "lane" FROM "AuditEvent" ORDER BY id',
    );
    expect(rows).toHaveLength(23);
    const lanes = byLane(rows);
    // No fork: within a lane no two events link to the same predecessor, and each links to the one before.
    for (const chain of lanes.values()) {
      expect(new Set(chain.map((r) => r.prevHash)).size).toBe(chain.length);
      for (let i = 1; i < chain.length; i++) expect(chain[i]?.prevHash).toBe(chain[i - 1]?.hash);
    }
    expect(await verify()).toMatchObject({ valid: true, checked: 23, unchained: 0 });
  });

  it('filters by actor, scope, scope prefix, action prefix and time, with cursor pages', async () => {
    const all = (await get<Page>('/api/v1/audit?limit=500')).body.items;
    expect(all).toHaveLength(23);
    expect(all[0]).toMatchObject({ action: 'cluster.credential-revoked', scope: 'cluster:c3' });
    const actor = all[0]!.actor;
    expect((await get<Page>(`/api/v1/audit?actor=${actor}`)).body.items).toHaveLength(22);
    const byAgent = (await get<Page>('/api/v1/audit?actor=agent:c0')).body.items;
    expect(byAgent).toHaveLength(1);
    expect(byAgent[0]).toMatchObject({
      action: 'cluster.registered',
      scope: 'cluster:c0',
      details: { agentVersion: 'test' },
    });
    // From where: the address (and client) of the request that made the change.
    const origin = (byAgent[0]!.details as { origin?: { ip?: string } }).origin;
    expect(origin?.ip).toMatch(/127\.0\.0\.1$/);
    expect((await get<Page>('/api/v1/audit?actor=nobody')).body.items).toHaveLength(0);
    const c3 = (await get<Page>('/api/v1/audit?scope=cluster:c3')).body.items;
    expect(c3.map((e) => e.action)).toEqual(['cluster.credential-revoked', 'cluster.created']);
    expect((await get<Page>('/api/v1/audit?scopePrefix=cluster:c1')).body.items).toHaveLength(12);
    expect((await get<Page>('/api/v1/audit?action=cluster.cred')).body.items).toHaveLength(1);
    const oldest = all.at(-1)!;
    const later = (await get<Page>(`/api/v1/audit?from=${encodeURIComponent(all[0]!.at)}`)).body.items;
    expect(later.map((e) => e.id)).toContain(all[0]!.id);
    expect((await get<Page>(`/api/v1/audit?to=${encodeURIComponent(oldest.at)}`)).body.items).toHaveLength(0);

    const first = (await get<Page>('/api/v1/audit?limit=8')).body;
    const second = (await get<Page>(`/api/v1/audit?limit=8&cursor=${first.nextCursor}`)).body;
    const third = (await get<Page>(`/api/v1/audit?limit=8&cursor=${second.nextCursor}`)).body;
    expect([...first.items, ...second.items, ...third.items].map((e) => e.id)).toEqual(all.map((e) => e.id));
    expect(third.nextCursor).toBeNull();

    // Prefixes and outcomes are literal text, never LIKE patterns; a cursor past any id is a 400.
    expect((await get<Page>('/api/v1/audit?scopePrefix=cluster:c_')).body.items).toHaveLength(0);
    expect((await get<Page>('/api/v1/audit?scopePrefix=%25')).body.items).toHaveLength(0);
    expect((await get<Page>('/api/v1/audit?action=cluster_cred')).body.items).toHaveLength(0);
    const backslash = await get<Page>('/api/v1/audit?outcome=%5C');
    expect(backslash.status).toBe(200);
    expect(backslash.body.items).toHaveLength(0);
    const huge = await get<{ path: string }>('/api/v1/audit?cursor=99999999999999999999');
    expect(huge.status).toBe(400);
    expect(huge.body.path).toContain('cursor');

    const bad = await get<{ code: string; path: string }>('/api/v1/audit?from=yesterday');
    expect(bad.status).toBe(400);
    expect(bad.body.path).toContain('from');
  });

  it('exports NDJSON and CSV', async () => {
    const nd = await get('/api/v1/audit?format=ndjson&scopePrefix=cluster:c1');
    expect(nd.type).toContain('application/x-ndjson');
    const lines = nd.text.trimEnd().split('\n');
    expect(lines).toHaveLength(12);
    expect((JSON.parse(lines[0]!) as AuditEventView).scope).toMatch(/^cluster:c1/);

    const csv = await get('/api/v1/audit?format=csv&scope=cluster:c5');
    expect(csv.type).toContain('text/csv');
    const csvLines = csv.text.split('\r\n');
    expect(csvLines[0]).toBe('id,at,actor,action,scope,details,prevHash,hash');
    expect(csvLines[1]).toContain(
      ',cluster.created,cluster:c5,"{""labels"":{""note"":""a,\\""b\\""""},""origin"":{""ip"":""',
    );
    expect(csvLines).toHaveLength(3);
    expect((await get('/api/v1/audit?format=ndjson&limit=2')).text.trimEnd().split('\n')).toHaveLength(2);
  });

  it('catches a hand-edited row (hash-mismatch) and a deleted middle row (broken-link)', async () => {
    const { rows } = await sql.query<{ id: string; details: unknown; lane: number }>(
      // pg returns a bigint as a string.
      'SELECT id, details, lane FROM "AuditEvent" ORDER BY id',
    );
    // The longest lane's chain, so that its middle has rows on both sides.
    const chain = [...byLane(rows).values()].sort((a, b) => b.length - a.length)[0]!;
    expect(chain.length).toBeGreaterThanOrEqual(3);
    const edited = chain[1]!;
    await sql.query(`UPDATE "AuditEvent" SET details = '{"labels":{"note":"forged"}}' WHERE id = $1`, [
      edited.id,
    ]);
    const mismatch = await verify();
    expect(mismatch.valid).toBe(false);
    expect(mismatch.lanes?.find((l) => l.lane === edited.lane)?.checked).toBe(2);
    expect(mismatch.firstBrokenAt).toMatchObject({
      id: edited.id,
      reason: 'hash-mismatch',
      lane: edited.lane,
    });

    // Putting the content back restores the chain: verification is about content, not about the row.
    await sql.query('UPDATE "AuditEvent" SET details = $1 WHERE id = $2', [
      JSON.stringify(edited.details),
      edited.id,
    ]);
    expect((await verify()).valid).toBe(true);

    await sql.query('DELETE FROM "AuditEvent" WHERE id = $1', [chain[1]!.id]);
    const gap = await verify();
    expect(gap.valid).toBe(false);
    expect(gap.firstBrokenAt).toMatchObject({ id: chain[2]!.id, reason: 'broken-link' });
  });

  it('fails when the hashes were nulled by hand, however many rows: an unchained row is a break', async () => {
    const { rows } = await sql.query<{ id: string }>('SELECT id FROM "AuditEvent" ORDER BY id');
    await sql.query('UPDATE "AuditEvent" SET hash = NULL, "prevHash" = NULL');
    await sql.query(`UPDATE "AuditEvent" SET details = '{"forged":true}' WHERE id = $1`, [rows[3]!.id]);
    const nulled = await verify();
    expect(nulled.valid).toBe(false);
    expect(nulled.firstBrokenAt).toMatchObject({ id: rows[0]!.id, reason: 'unchained' });
  });

  it("a viewer verifies incrementally (and sees the last full pass's break); full=true needs an admin (403 naming full), and a bad value is a 400", async () => {
    const created = await fetch(`${hub.url}/api/v1/tokens`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'audit-viewer', role: 'viewer' }),
    });
    expect(created.status).toBe(201);
    const { secret } = (await created.json()) as { secret: string };
    const asViewer = (path: string) =>
      fetch(`${hub.url}${path}`, { headers: { authorization: `Bearer ${secret}` } });

    const full = await asViewer('/api/v1/audit/verify?full=true');
    expect(full.status).toBe(403);
    const refused = (await full.json()) as { code: string; path: string; message: string };
    expect(refused).toMatchObject({ code: 'forbidden', path: 'full' });
    expect(refused.message).toContain('admin');

    const incremental = await asViewer('/api/v1/audit/verify');
    expect(incremental.status).toBe(200);
    const answer = (await incremental.json()) as AuditVerifyView;
    // Last here, after the nulled hashes: the break the last full pass found stays in every answer.
    expect(answer).toMatchObject({
      valid: false,
      mode: 'incremental',
      lastFullPass: { valid: false, firstBrokenAt: { reason: 'unchained' } },
    });
    expect(answer.lanes?.every((l) => l.throughId !== undefined)).toBe(true);

    const bad = await get<{ code: string; path: string }>('/api/v1/audit/verify?full=yes');
    expect([bad.status, bad.body.code, bad.body.path]).toEqual([400, 'invalid-request', 'full']);
  });
});
