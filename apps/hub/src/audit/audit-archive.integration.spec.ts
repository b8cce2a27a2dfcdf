import 'reflect-metadata';
import { createHash } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hubCaller, startTestHub, type TestHub } from '../testing/index.js';
import { ChainVerifier, GENESIS_HASH } from './audit-chain.js';
import type { ArchiveCheckpoint } from './audit-archive.service.js';
import type { AuditEventView, AuditVerifyView } from '@flotilla/contract';

// The real hub on real PostgreSQL: events come from real API calls, archives over HTTP, and
// tampering is done by hand in SQL.

let hub: TestHub;
let sql: pg.Client;
const call = hubCaller(() => hub);

/** An archive as the hub streams it: its event lines, its last line, and the raw text. */
async function exportArchive(before: Date) {
  const res = await fetch(
    `${hub.url}/api/v1/audit/archive?before=${encodeURIComponent(before.toISOString())}`,
  );
  const text = await res.text();
  const lines = text.split('\n').filter((l) => l !== '');
  const last = lines.length > 0 ? (JSON.parse(lines[lines.length - 1]!) as Record<string, unknown>) : {};
  return {
    status: res.status,
    type: res.headers.get('content-type'),
    text,
    events: lines.slice(0, -1).map((l) => JSON.parse(l) as AuditEventView),
    eventText: lines.slice(0, -1).map((l) => `${l}\n`),
    last,
  };
}

// Full: these tests count every event after the checkpoint and edit rows already verified.
const verify = async () => (await call<AuditVerifyView>('GET', '/api/v1/audit/verify?full=true')).body;
const eventCount = async () =>
  Number((await sql.query<{ n: string }>('SELECT count(*) AS n FROM "AuditEvent"')).rows[0]?.n);
/** Distinct times: an archive cuts by `at`, in milliseconds. */
const tick = () => new Promise((r) => setTimeout(r, 5));

async function makeEvents(prefix: string, n: number): Promise<void> {
  for (let i = 0; i < n; i++) {
    const created = await call('POST', '/api/v1/clusters', { name: `${prefix}-${i}` });
    expect(created.status).toBe(201);
  }
}

describe('audit archive and prune (real hub, PostgreSQL)', () => {
  let cut: Date;
  let first: ArchiveCheckpoint;

  beforeAll(async () => {
    // One lane: the chain is one sequence here, so "the first event after the cut" is one row. Archives
    // of several lanes: audit-lanes.integration.spec.ts.
    hub = await startTestHub({ FLOTILLA_AUDIT_CHAIN_LANES: '1' });
    sql = new pg.Client({ connectionString: hub.postgres.url });
    await sql.connect();
    await makeEvents('old', 6);
    await tick();
    cut = new Date();
    await tick();
    await makeEvents('new', 3);
  }, 180_000);

  afterAll(async () => {
    await sql?.end();
    await hub?.close();
  }, 60_000);

  it('exports the events before the cut, oldest first, chain-verified, ending with the checkpoint', async () => {
    const before = await eventCount();
    const archive = await exportArchive(cut);

    expect(archive.status).toBe(200);
    expect(archive.type).toContain('application/x-ndjson');
    expect(archive.events.length).toBeGreaterThanOrEqual(6);
    expect(archive.events.every((e) => Date.parse(e.at) < cut.getTime())).toBe(true);
    expect(archive.events.filter((e) => e.action === 'cluster.created').map((e) => e.scope)).toEqual(
      Array.from({ length: 6 }, (_, i) => `cluster:old-${i}`),
    );
    first = (archive.last as { checkpoint: ArchiveCheckpoint }).checkpoint;
    const lastEvent = archive.events[archive.events.length - 1]!;
    expect(first).toEqual({
      throughId: lastEvent.id,
      hash: lastEvent.hash,
      events: archive.events.length,
      sha256: createHash('sha256').update(archive.eventText.join('')).digest('hex'),
      previousHash: GENESIS_HASH,
      lanes: [
        {
          lane: 0,
          throughId: lastEvent.id,
          hash: lastEvent.hash,
          events: archive.events.length,
          previousHash: GENESIS_HASH,
        },
      ],
    });
    // The file verifies on its own, from genesis, with nothing but the chain's rules.
    const offline = new ChainVerifier(first.previousHash);
    for (const e of archive.events) {
      expect(offline.next({ ...e, id: BigInt(e.id), at: new Date(e.at) })).toBe(true);
    }
    // Exporting changes nothing.
    expect(await eventCount()).toBe(before);
  });

  it('refuses to prune what is not exactly the archive, naming the field, and prunes nothing', async () => {
    const before = await eventCount();
    const wrongSha = await call<{ code: string; path: string }>('POST', '/api/v1/audit/prune', {
      ...first,
      sha256: 'f'.repeat(64),
    });
    expect([wrongSha.status, wrongSha.body.code, wrongSha.body.path]).toEqual([
      409,
      'archive-mismatch',
      'sha256',
    ]);
    const wrongHash = await call<{ code: string; path: string }>('POST', '/api/v1/audit/prune', {
      ...first,
      hash: '0'.repeat(64),
    });
    expect([wrongHash.status, wrongHash.body.path]).toEqual([409, 'hash']);
    const wrongLaneHash = await call<{ code: string; path: string }>('POST', '/api/v1/audit/prune', {
      ...first,
      lanes: first.lanes!.map((l) => ({ ...l, hash: '0'.repeat(64) })),
    });
    expect([wrongLaneHash.status, wrongLaneHash.body.path]).toEqual([409, 'hash']);
    const malformed = await call<{ code: string; path: string }>('POST', '/api/v1/audit/prune', {
      throughId: 'last',
      hash: first.hash,
      sha256: first.sha256,
    });
    expect([malformed.status, malformed.body.path]).toEqual([400, 'throughId']);
    expect(await eventCount()).toBe(before);
  });

  it('prunes exactly the archived events; verify still passes across the cut', async () => {
    const before = await eventCount();
    const pruned = await call<{ pruned: number; checkpoint: { throughId: string; hash: string } }>(
      'POST',
      '/api/v1/audit/prune',
      { throughId: first.throughId, hash: first.hash, sha256: first.sha256 },
    );

    expect(pruned.status).toBe(200);
    expect(pruned.body.pruned).toBe(first.events);
    expect(pruned.body.checkpoint).toMatchObject({ throughId: first.throughId, hash: first.hash });
    // The archived events went, the rest stayed, and the prune itself is on the record.
    expect(await eventCount()).toBe(before - first.events + 1);
    const remaining = await sql.query<{ scope: string; action: string }>(
      'SELECT scope, action FROM "AuditEvent" ORDER BY id',
    );
    expect(remaining.rows.map((r) => r.scope)).toEqual(
      expect.arrayContaining(['cluster:new-0', 'cluster:new-1', 'cluster:new-2']),
    );
    expect(remaining.rows.some((r) => r.scope.startsWith('cluster:old-'))).toBe(false);
    expect(remaining.rows.at(-1)?.action).toBe('audit.pruned');
    expect(await verify()).toMatchObject({ valid: true, checked: before - first.events + 1, unchained: 0 });

    // Once pruned, the same archive cannot be pruned again, and nothing before the cut is left.
    const again = await call<{ code: string }>('POST', '/api/v1/audit/prune', first);
    expect([again.status, again.body.code]).toEqual([409, 'already-pruned']);
    const empty = await call<{ code: string; path: string }>(
      'GET',
      `/api/v1/audit/archive?before=${encodeURIComponent(cut.toISOString())}`,
    );
    expect([empty.status, empty.body.code, empty.body.path]).toEqual([422, 'nothing-to-archive', 'before']);
  });

  it('a tampered event after the cut fails verification, as does deleting the first one after it', async () => {
    const [row] = (
      await sql.query<{ id: string; details: unknown }>(
        `SELECT id, details FROM "AuditEvent" WHERE scope = 'cluster:new-1'`,
      )
    ).rows;
    await sql.query(`UPDATE "AuditEvent" SET details = '{"labels":{"tampered":"yes"}}' WHERE id = $1`, [
      row!.id,
    ]);
    expect(await verify()).toMatchObject({
      valid: false,
      firstBrokenAt: { id: row!.id, reason: 'hash-mismatch' },
    });
    await sql.query(`UPDATE "AuditEvent" SET details = $2 WHERE id = $1`, [
      row!.id,
      JSON.stringify(row!.details),
    ]);
    expect((await verify()).valid).toBe(true);

    const firstAfter = await sql.query<Record<string, unknown>>(
      'SELECT * FROM "AuditEvent" ORDER BY id LIMIT 1',
    );
    const kept = firstAfter.rows[0]!;
    await sql.query('DELETE FROM "AuditEvent" WHERE id = $1', [kept['id']]);
    const broken = await verify();
    expect(broken).toMatchObject({ valid: false, firstBrokenAt: { reason: 'broken-link' } });
    expect(broken.firstBrokenAt?.message).toContain('archive checkpoint');
    await sql.query(
      `INSERT INTO "AuditEvent" (id, at, actor, action, scope, details, "prevHash", hash)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
      [
        kept['id'],
        kept['at'],
        kept['actor'],
        kept['action'],
        kept['scope'],
        JSON.stringify(kept['details']),
        kept['prevHash'],
        kept['hash'],
      ],
    );
    expect((await verify()).valid).toBe(true);
  });

  it('a second archive starts at the first checkpoint and prunes the same way', async () => {
    await tick();
    const archive = await exportArchive(new Date());
    const checkpoint = (archive.last as { checkpoint: ArchiveCheckpoint }).checkpoint;
    expect(checkpoint.previousHash).toBe(first.hash);
    expect(archive.events[0]?.prevHash).toBe(first.hash);

    const pruned = await call<{ pruned: number }>('POST', '/api/v1/audit/prune', checkpoint);
    expect([pruned.status, pruned.body.pruned]).toEqual([200, checkpoint.events]);
    // Left: the second prune's own event, chained to the second checkpoint.
    expect(await verify()).toMatchObject({ valid: true, checked: 1, unchained: 0 });
    await makeEvents('later', 1);
    expect(await verify()).toMatchObject({ valid: true, checked: 2, unchained: 0 });
  });
});
