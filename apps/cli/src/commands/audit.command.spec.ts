import { auditEventViewSchema } from '@flotilla/contract';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { deleteRedisKeys } from '../fleet/redis-server.js';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../fleet/free-port.js';
import { LocalFleet } from '../fleet/local-fleet.js';
import { runInProcess } from '../testing/run-in-process.js';
import { headersOf, rowOf, startStandInHub, type StandInHub } from '../testing/stand-in-hub.js';
import { csvField } from '@flotilla/contract';
import { run, verifyText, type AuditEventView, type AuditVerifyView } from './audit.command.js';

describe('flotilla audit without a hub', () => {
  it.each([
    [['--limit', '0'], "--limit must be a positive integer, not '0'"],
    [['--limit', '5', '--all'], '--limit and --all exclude each other'],
    [['--ndjson', '--csv'], '--ndjson and --csv exclude each other'],
    [['--csv', '-o', 'json'], '--csv and -o exclude each other'],
    [['--scope', 'a', '--scope-prefix', 'b'], '--scope and --scope-prefix exclude each other'],
    [
      ['--since', 'yesterday'],
      "--since must be an RFC 3339 time such as 2026-03-29T01:00:00Z, not 'yesterday'",
    ],
    // The old spelling still works, and its errors use the new one.
    [
      ['--from', 'yesterday'],
      "--since must be an RFC 3339 time such as 2026-03-29T01:00:00Z, not 'yesterday'",
    ],
    [
      ['--since', '2026-01-01T00:00:00Z', '--from', '2026-01-01T00:00:00Z'],
      '--from is the old spelling of --since',
    ],
    [['verify', '--actor', 'x'], "--actor is an option of 'audit list', not 'audit verify'"],
    [['verify', 'extra'], "unexpected argument 'extra'"],
    [['list', '--full'], "--full is an option of 'audit verify', not 'audit list'"],
    [['archive', '--full'], "--full is an option of 'audit verify', not 'audit archive'"],
    [['purge'], "unknown sub-command 'purge'"],
    [['archive', '--out', 'a.ndjson'], '--before and --out are required'],
    [['archive', '--before', 'yesterday', '--out', 'a.ndjson'], '--before must be an RFC 3339 time'],
    [
      ['archive', '--before', '2026-01-01T00:00:00Z', '--out', 'a', '--actor', 'x'],
      "--actor is an option of 'audit list', not 'audit archive'",
    ],
    [['prune'], 'missing FILE'],
    [
      ['prune', 'a.ndjson', '--before', '2026-01-01T00:00:00Z'],
      "--before and --out are options of 'audit archive'",
    ],
    [['list', '--out', 'a.ndjson'], "--before and --out are options of 'audit archive'"],
  ])('%j is a usage error (exit 2)', async (argv, message) => {
    const r = await runInProcess(run, argv);
    expect(r.code).toBe(2);
    expect(r.out).toBe('');
    expect(r.err).toContain(`flotilla audit: ${message}`);
  });

  it('exits 1 naming the URL when nothing listens there', async () => {
    const hub = `http://127.0.0.1:${await freePort()}`;
    const r = await runInProcess(run, ['verify', '--hub', hub]);
    expect(r.code).toBe(1);
    expect(r.err).toMatch(new RegExp(`^flotilla audit: cannot reach the hub at ${hub}`));
  });

  it('words the verification result for people', () => {
    expect(verifyText({ valid: true, checked: 3, unchained: 0 })).toBe(
      'audit chain intact: 3 events checked',
    );
    expect(verifyText({ valid: true, checked: 100000, unchained: 0, complete: false })).toBe(
      'audit chain intact: 100000 events checked (more to check: run verify again)',
    );
    expect(
      verifyText({
        valid: false,
        checked: 2,
        unchained: 0,
        firstBrokenAt: { id: '2', at: '2026-01-01T00:00:00.000Z', reason: 'broken-link', message: 'gone' },
      }),
    ).toBe('audit chain BROKEN at event 2 (2026-01-01T00:00:00.000Z): broken-link — gone');
    expect(
      verifyText({
        valid: false,
        checked: 9,
        unchained: 1,
        firstBrokenAt: { id: '7', at: '2026-01-01T00:00:00.000Z', reason: 'unchained', message: '', lane: 3 },
      }),
    ).toBe('audit chain BROKEN at event 7 in lane 3 (2026-01-01T00:00:00.000Z): unchained');
    expect(csvField('a "b", c')).toBe('"a ""b"", c"');
  });
});

/**
 * Against a real hub process on a fresh PostgreSQL database (the tampering is done there by hand).
 * Needs the built hub (`npx tsc -b apps/hub/tsconfig.app.json`), PostgreSQL and Redis.
 */
const PG_URL = process.env['TEST_DATABASE_URL'] ?? 'postgresql://postgres@127.0.0.1:5432/postgres';
const REDIS_URL = process.env['TEST_REDIS_URL'] ?? 'redis://127.0.0.1:6379';

describe('flotilla audit against a real hub', () => {
  const work = mkdtempSync(join(tmpdir(), 'flotilla-cli-audit-'));
  const suffix = randomBytes(4).toString('hex');
  const dbName = `flotilla_cli_audit_${suffix}`;
  const redisPrefix = `flotilla-cli-audit-${suffix}`;
  const admin = new pg.Client({ connectionString: PG_URL });
  let sql: pg.Client;
  let fleet: LocalFleet;
  let hub: string[];
  const cli = (...argv: string[]) => runInProcess(run, [...argv, ...hub]);

  beforeAll(async () => {
    await admin.connect();
    await admin.query(`CREATE DATABASE ${dbName}`);
    const dbUrl = new URL(PG_URL);
    dbUrl.pathname = `/${dbName}`;
    fleet = await LocalFleet.start({
      workDir: join(work, 'fleet'),
      clusters: 0,
      databaseUrl: dbUrl.toString(),
      redisUrl: REDIS_URL,
      redisPrefix,
      // One chain lane: the events form one sequence, so "the event after the edited one" is one row
      // (the hub's lanes are tested in apps/hub/src/audit/audit-lanes.integration.spec.ts).
      hubEnv: { FLOTILLA_AUDIT_CHAIN_LANES: '1' },
    });
    hub = ['--hub', fleet.hubUrl];
    sql = new pg.Client({ connectionString: dbUrl.toString() });
    await sql.connect();
    for (const name of ['eu1', 'us1', 'ap1', 'sa1'])
      await fleet.api.registerCluster(name, { note: 'x, "y"' });
  }, 90_000);

  afterAll(async () => {
    await sql?.end();
    await fleet?.stop();
    await admin.query(`DROP DATABASE IF EXISTS ${dbName} WITH (FORCE)`);
    await admin.end();
    await deleteRedisKeys(REDIS_URL, redisPrefix);
    rmSync(work, { recursive: true, force: true });
  }, 60_000);

  it('lists with filters in every format', async () => {
    const json = await cli('list', '--action', 'cluster.', '-o', 'json');
    expect(json.code).toBe(0);
    const events = JSON.parse(json.out) as AuditEventView[];
    expect(events.map((e) => e.scope)).toEqual(['cluster:sa1', 'cluster:ap1', 'cluster:us1', 'cluster:eu1']);

    const one = JSON.parse((await cli('--scope', 'cluster:us1', '-o', 'json')).out) as AuditEventView[];
    expect(one).toHaveLength(1);
    // Details carry the change and where the request came from.
    expect(one[0]).toMatchObject({
      action: 'cluster.created',
      details: {
        labels: { note: 'x, "y"' },
        origin: { ip: expect.stringMatching(/127\.0\.0\.1$/) as unknown },
      },
    });
    expect((await cli('--since', events[0]!.at, '--limit', '1', '-o', 'json')).out).toContain('cluster:sa1');

    const table = await cli('--scope-prefix', 'cluster:e');
    expect(table.out.split('\n')[0]).toMatch(/^AT +ACTOR +ACTION +SCOPE +DETAILS$/);
    expect(table.out).toMatch(
      /cluster\.created +cluster:eu1 +\{"labels":\{"note":"x, \\"y\\""\},"origin":\{"ip":/,
    );

    const nd = await cli('--ndjson', '--all');
    expect(nd.out.trimEnd().split('\n')).toHaveLength(4);
    const csv = await cli('--csv', '--limit', '2');
    const rows = csv.out.split('\r\n');
    expect(rows[0]).toBe('id,at,actor,action,scope,details,prevHash,hash');
    expect(rows[1]).toContain(
      ',cluster.created,cluster:sa1,"{""labels"":{""note"":""x, \\""y\\""""},""origin"":{""ip"":""',
    );
    expect(rows).toHaveLength(4);
  });

  it('verify exits 0 on an intact chain, and 1 naming the event after a hand edit or delete', async () => {
    const ok = await cli('verify', '--full');
    expect(ok).toEqual({ code: 0, out: 'audit chain intact: 4 events checked\n', err: '' });
    // Without --full the hub checks only what is new since the last verified position.
    const incremental = await cli('verify', '-o', 'json');
    expect(incremental.code).toBe(0);
    expect(JSON.parse(incremental.out)).toMatchObject({ valid: true, checked: 0, mode: 'incremental' });

    const { rows } = await sql.query<{ id: string; details: unknown }>(
      'SELECT id, details FROM "AuditEvent" ORDER BY id',
    );
    await sql.query(`UPDATE "AuditEvent" SET actor = 'mallory' WHERE id = $1`, [rows[1]!.id]);
    // Already verified: only a full pass rereads it.
    const edited = await cli('verify', '--full', '-o', 'json');
    expect(edited.code).toBe(1);
    const result = JSON.parse(edited.out) as AuditVerifyView;
    expect(result).toMatchObject({
      valid: false,
      checked: 2,
      mode: 'full',
      firstBrokenAt: { id: rows[1]!.id, reason: 'hash-mismatch' },
    });

    await sql.query(`DELETE FROM "AuditEvent" WHERE id = $1`, [rows[1]!.id]);
    const deleted = await cli('verify', '--full');
    expect(deleted.code).toBe(1);
    expect(deleted.out).toMatch(
      new RegExp(`^audit chain BROKEN at event ${rows[2]!.id} in lane 0 \\(.+\\): broken-link — `),
    );
  });
});

describe('flotilla audit archive and prune against a real hub', () => {
  const work = mkdtempSync(join(tmpdir(), 'flotilla-cli-archive-'));
  const suffix = randomBytes(4).toString('hex');
  const dbName = `flotilla_cli_archive_${suffix}`;
  const redisPrefix = `flotilla-cli-archive-${suffix}`;
  const admin = new pg.Client({ connectionString: PG_URL });
  let fleet: LocalFleet;
  let hub: string[];
  const cli = (...argv: string[]) => runInProcess(run, [...argv, ...hub]);

  beforeAll(async () => {
    await admin.connect();
    await admin.query(`CREATE DATABASE ${dbName}`);
    const dbUrl = new URL(PG_URL);
    dbUrl.pathname = `/${dbName}`;
    fleet = await LocalFleet.start({
      workDir: join(work, 'fleet'),
      clusters: 0,
      databaseUrl: dbUrl.toString(),
      redisUrl: REDIS_URL,
      redisPrefix,
      // One chain lane: the events form one sequence, so "the event after the edited one" is one row
      // (the hub's lanes are tested in apps/hub/src/audit/audit-lanes.integration.spec.ts).
      hubEnv: { FLOTILLA_AUDIT_CHAIN_LANES: '1' },
    });
    hub = ['--hub', fleet.hubUrl];
    for (const name of ['eu1', 'us1', 'ap1']) await fleet.api.registerCluster(name);
  }, 90_000);

  afterAll(async () => {
    await fleet?.stop();
    await admin.query(`DROP DATABASE IF EXISTS ${dbName} WITH (FORCE)`);
    await admin.end();
    await deleteRedisKeys(REDIS_URL, redisPrefix);
    rmSync(work, { recursive: true, force: true });
  }, 60_000);

  it('archives to a file, refuses a changed copy, prunes the archive, and the chain still verifies', async () => {
    const file = join(work, 'audit.ndjson');
    const archived = await cli(
      'archive',
      '--before',
      new Date(Date.now() + 1000).toISOString(),
      '--out',
      file,
    );
    expect(archived.code).toBe(0);
    expect(archived.out).toMatch(/^archived 3 events through event \d+ to /);
    const lines = readFileSync(file, 'utf8').trimEnd().split('\n');
    expect(lines).toHaveLength(4);
    expect(JSON.parse(lines[3]!)).toMatchObject({ checkpoint: { events: 3 } });
    // Never written over.
    const again = await cli('archive', '--before', new Date().toISOString(), '--out', file);
    expect([again.code, again.err]).toEqual([2, expect.stringContaining('exists') as unknown]);

    const changed = join(work, 'changed.ndjson');
    writeFileSync(
      changed,
      [lines[0]!.replace('cluster:eu1', 'cluster:xx1'), ...lines.slice(1)].join('\n') + '\n',
    );
    const refused = await cli('prune', changed);
    expect(refused.code).toBe(2);
    expect(refused.err).toContain('does not match its checkpoint');
    expect((await cli('verify', '--full')).out).toBe('audit chain intact: 3 events checked\n');

    const pruned = await cli('prune', file);
    expect(pruned).toMatchObject({ code: 0, err: '' });
    expect(pruned.out).toMatch(
      /^pruned 3 audit events through event \d+; verification now starts at checkpoint [0-9a-f]{64}/,
    );
    // Left: the prune's own event, chained to the checkpoint.
    expect(await cli('verify', '--full')).toEqual({
      code: 0,
      out: 'audit chain intact: 1 events checked\n',
      err: '',
    });
    const twice = await cli('prune', file);
    expect(twice.code).toBe(1);
    expect(twice.err).toContain('already');
  });
});

describe('flotilla audit -o wide against a stand-in hub', () => {
  const event = auditEventViewSchema.parse({
    id: '42',
    at: '2026-12-01T10:00:00.123Z',
    actor: 'user:ana',
    action: 'pin.add',
    scope: 'target:web-eu1',
    details: { revision: 'abc' },
    prevHash: 'p'.repeat(64),
    hash: 'h'.repeat(64),
  });
  let hub: StandInHub;
  beforeAll(async () => {
    hub = await startStandInHub({ '/api/v1/audit': { items: [event], nextCursor: null } });
  });
  afterAll(() => hub.close());

  it("adds each event's id and its hash in the chain", async () => {
    const table = await runInProcess(run, ['--hub', hub.url]);
    expect(headersOf(table.out)).toEqual(['AT', 'ACTOR', 'ACTION', 'SCOPE', 'DETAILS']);
    const wide = await runInProcess(run, ['list', '--hub', hub.url, '-o', 'wide']);
    expect(wide.err).toBe('');
    expect(wide.code).toBe(0);
    expect(headersOf(wide.out)).toEqual(Object.keys(rowOf(wide.out)));
    expect(rowOf(wide.out)).toEqual({
      ID: '42',
      AT: '2026-12-01T10:00:00Z',
      ACTOR: 'user:ana',
      ACTION: 'pin.add',
      SCOPE: 'target:web-eu1',
      HASH: 'h'.repeat(64),
      DETAILS: '{"revision":"abc"}',
    });
  });

  it('refuses -o wide for verify before asking the hub, and --csv with it', async () => {
    const asked = hub.requests.length;
    const verify = await runInProcess(run, ['verify', '-o', 'wide', '--hub', hub.url]);
    expect(verify.code).toBe(2);
    expect(verify.err).toContain('flotilla audit: -o wide is for listings');
    const csv = await runInProcess(run, ['--csv', '-o', 'wide', '--hub', hub.url]);
    expect(csv.code).toBe(2);
    expect(csv.err).toContain('--csv and -o exclude each other');
    expect(hub.requests.length).toBe(asked);
  });
});
