import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  createMigratedPglite,
  createTestPostgres,
  openTestDatabase,
  type TestPostgres,
} from '../testing/test-database.js';
import type { Database } from './database.js';
import {
  dropMonthPartitionsBefore,
  ensureMonthPartitions,
  keepPartitionsAhead,
  listMonthPartitions,
  MONTHS_AHEAD,
} from './partitions.js';

const month = (y: number, m: number) => new Date(Date.UTC(y, m - 1, 1));

describe('monthly partitions of sync runs and audit events (PostgreSQL)', () => {
  let pg: TestPostgres;
  let db: Database;

  beforeEach(async () => {
    pg = await createTestPostgres();
    db = await openTestDatabase(pg.url);
  });

  afterEach(async () => {
    await db?.close();
    await pg?.drop();
  });

  const run = (id: string, createdAt: Date | undefined, startedAt: Date) => ({
    id,
    targetId: 't1',
    clusterId: 'c1',
    revision: 'c1',
    bundleDigest: 'sha256:any',
    trigger: 'auto',
    outcome: 'Succeeded',
    startedAt,
    finishedAt: startedAt,
    agentReportId: `report-${id}`,
    ...(createdAt && { createdAt }),
  });

  /** Which partition holds each run, by id. */
  const partitionOfRuns = async () =>
    Object.fromEntries(
      (
        await db.sql.query<{ id: string; part: string }>(
          'SELECT id, tableoid::regclass::text AS part FROM "SyncRun" ORDER BY id',
        )
      ).map((r) => [r.id, r.part]),
    );

  it('stores each row in the month of the hub-clock key, whatever the agent clock said', async () => {
    await ensureMonthPartitions(db.prisma, 'SyncRun', month(2030, 1), 1);
    await db.prisma.syncRun.createMany({
      data: [
        run('jan', new Date('2030-01-31T23:59:59.999Z'), new Date('2030-01-31T00:00:00Z')),
        run('feb', new Date('2030-02-01T00:00:00Z'), new Date('2030-01-31T00:00:00Z')),
        // An agent whose clock is decades off: the run is stored by when the hub got it.
        run('now-1970', undefined, new Date('1970-01-01T00:00:00Z')),
        run('now-9999', undefined, new Date('9999-12-31T00:00:00Z')),
        // A month nobody created: the DEFAULT partition takes it rather than failing the insert.
        run('old', new Date('2001-05-05T00:00:00Z'), new Date('2001-05-05T00:00:00Z')),
      ],
    });
    const now = new Date();
    const current = `"SyncRun_p${now.getUTCFullYear()}_${String(now.getUTCMonth() + 1).padStart(2, '0')}"`;
    expect(await partitionOfRuns()).toEqual({
      jan: '"SyncRun_p2030_01"',
      feb: '"SyncRun_p2030_02"',
      'now-1970': current,
      'now-9999': current,
      old: '"SyncRun_default"',
    });

    const event = await db.prisma.auditEvent.create({
      data: { at: new Date('2030-02-14T12:00:00Z'), actor: 'alice', action: 'x.y', scope: 'hub' },
    });
    await ensureMonthPartitions(db.prisma, 'AuditEvent', month(2030, 2), 0);
    const [where] = await db.sql.query<{ part: string }>(
      'SELECT tableoid::regclass::text AS part FROM "AuditEvent" WHERE id = $1',
      [event.id.toString()],
    );
    // Stored in DEFAULT before its month existed, moved into the month when it was created.
    expect(where?.part).toBe('"AuditEvent_p2030_02"');
  });

  it('creates the coming months ahead, once, with two replicas asking at the same time', async () => {
    const other = await openTestDatabase(pg.url);
    try {
      const now = month(2031, 11);
      const [a, b] = await Promise.all([
        keepPartitionsAhead(db.prisma, now),
        keepPartitionsAhead(other.prisma, now),
      ]);
      const expected = ['2031_11', '2031_12', '2032_01', '2032_02'].flatMap((m) => [
        `SyncRun_p${m}`,
        `AuditEvent_p${m}`,
      ]);
      expect(MONTHS_AHEAD).toBe(3);
      expect([...a, ...b].sort()).toEqual(expected.sort());
      // Again: nothing left to do.
      expect(await keepPartitionsAhead(other.prisma, now)).toEqual([]);
      const names = (await listMonthPartitions(db.prisma, 'SyncRun')).map((p) => p.name);
      expect(names.filter((n) => n >= 'SyncRun_p2031_11')).toEqual([
        'SyncRun_p2031_11',
        'SyncRun_p2031_12',
        'SyncRun_p2032_01',
        'SyncRun_p2032_02',
      ]);
    } finally {
      await other.close();
    }
  });

  it('moves rows that went to DEFAULT into their month when the month is created', async () => {
    await db.prisma.syncRun.createMany({
      data: [
        run('stray-1', new Date('2035-03-02T00:00:00Z'), new Date('2035-03-02T00:00:00Z')),
        run('stray-2', new Date('2035-03-30T00:00:00Z'), new Date('2035-03-30T00:00:00Z')),
        run('later', new Date('2035-06-01T00:00:00Z'), new Date('2035-06-01T00:00:00Z')),
      ],
    });

    expect(await ensureMonthPartitions(db.prisma, 'SyncRun', month(2035, 3), 0)).toEqual([
      'SyncRun_p2035_03',
    ]);

    expect(await partitionOfRuns()).toEqual({
      'stray-1': '"SyncRun_p2035_03"',
      'stray-2': '"SyncRun_p2035_03"',
      later: '"SyncRun_default"',
    });
    // Attached with every index of the table (the primary key among them).
    const [indexes] = await db.sql.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM pg_indexes WHERE tablename = 'SyncRun_p2035_03'`,
    );
    const [parentIndexes] = await db.sql.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM pg_indexes WHERE tablename = 'SyncRun'`,
    );
    expect(indexes?.n).toBe(parentIndexes?.n);
  });

  it('drops whole months ending by the cutoff, and keeps a month holding an id above the guard', async () => {
    await ensureMonthPartitions(db.prisma, 'AuditEvent', month(2020, 1), 2);
    const at = (iso: string) => ({ at: new Date(iso), actor: 'alice', action: 'x.y', scope: 'hub' });
    await db.prisma.auditEvent.createMany({
      data: [at('2020-01-10T00:00:00Z'), at('2020-01-20T00:00:00Z'), at('2020-02-10T00:00:00Z')],
    });
    const ids = (await db.prisma.auditEvent.findMany({ orderBy: { id: 'asc' } })).map((e) => e.id);

    // Everything through the January events is archived: January may go, February (a later id) stays.
    const dropped = await dropMonthPartitionsBefore(db.prisma, 'AuditEvent', month(2020, 4), [
      { lane: 0, throughId: ids[1] as bigint },
    ]);

    expect(dropped).toEqual({ partitions: ['AuditEvent_p2020_01', 'AuditEvent_p2020_03'], rows: 2 });
    expect((await db.prisma.auditEvent.findMany()).map((e) => e.id)).toEqual([ids[2]]);
    const left = (await listMonthPartitions(db.prisma, 'AuditEvent')).map((p) => p.name);
    expect(left).toContain('AuditEvent_p2020_02');
    expect(left).not.toContain('AuditEvent_p2020_01');
  });
});

describe('monthly partitions on PGlite (the embedded database of development mode)', () => {
  it('keeps months ahead, stores rows in them, and drops them the same way', async () => {
    const db = await createMigratedPglite();
    try {
      const created = await keepPartitionsAhead(db.prisma, month(2040, 1));
      expect(created).toContain('SyncRun_p2040_04');
      expect(await keepPartitionsAhead(db.prisma, month(2040, 1))).toEqual([]);
      await db.prisma.auditEvent.create({
        data: { at: new Date('2040-02-02T00:00:00Z'), actor: 'alice', action: 'x.y', scope: 'hub' },
      });
      const dropped = await dropMonthPartitionsBefore(db.prisma, 'AuditEvent', month(2040, 3));
      // Every month before March 2040 goes (those the migration made for today's months too).
      expect(dropped.rows).toBe(1);
      expect(dropped.partitions).toEqual(
        expect.arrayContaining(['AuditEvent_p2040_01', 'AuditEvent_p2040_02']),
      );
      expect(dropped.partitions).not.toContain('AuditEvent_p2040_03');
      expect(await db.prisma.auditEvent.count()).toBe(0);
    } finally {
      await db.close();
    }
  });
});
