import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { createTestPostgres, openTestDatabase, type TestPostgres } from '../testing/test-database.js';
import type { Database } from '../db/database.js';
import { ensureMonthPartitions, listMonthPartitions } from '../db/partitions.js';
import { AuditArchive, type ArchiveCheckpoint } from './audit-archive.service.js';
import { AuditLog } from './audit.service.js';

const HOUR = 60 * 60 * 1000;
const monthStart = (d: Date, plus = 0) => new Date(Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + plus, 1));
const partName = (d: Date) =>
  `AuditEvent_p${d.getUTCFullYear()}_${String(d.getUTCMonth() + 1).padStart(2, '0')}`;

// Events of past months, written by the real AuditLog with the clock set back (only Date is faked),
// so their hashes cover the `at` they are stored with and the chain verifies.
describe('an audit prune drops the months it wholly archived (PostgreSQL)', () => {
  let pg: TestPostgres;
  let db: Database;
  let audit: AuditLog;
  let archive: AuditArchive;

  beforeEach(async () => {
    pg = await createTestPostgres();
    db = await openTestDatabase(pg.url);
    audit = new AuditLog(db);
    archive = new AuditArchive(db, audit);
  });

  afterEach(async () => {
    vi.useRealTimers();
    await db?.close();
    await pg?.drop();
  });

  async function recordAt(at: Date, scope: string): Promise<void> {
    vi.useFakeTimers({ toFake: ['Date'] });
    vi.setSystemTime(at);
    try {
      await audit.record({ actor: 'user:alice', action: 'cluster.created', scope, origin: null });
    } finally {
      vi.useRealTimers();
    }
  }

  /** Exports the archive of the events before `before` and prunes it, as an operator would. */
  async function archiveAndPrune(before: Date) {
    const lines: string[] = [];
    for await (const line of archive.lines(await archive.range(before))) lines.push(line);
    // Every lane's cut, as the archive's last line gives them.
    const { checkpoint } = JSON.parse(lines.at(-1)!) as { checkpoint: ArchiveCheckpoint };
    return archive.prune(checkpoint, 'user:alice');
  }

  const months = async () => (await listMonthPartitions(db.prisma, 'AuditEvent')).map((p) => p.name);

  it('keeps a month that still holds events after the checkpoint, drops it once archived, and the chain verifies', async () => {
    const now = new Date();
    const a = new Date(monthStart(now, -3).getTime() + 5 * 24 * HOUR);
    const b = new Date(monthStart(now, -2).getTime() + 5 * 24 * HOUR);
    await ensureMonthPartitions(db.prisma, 'AuditEvent', a, 3);
    await recordAt(a, 'cluster:a1');
    await recordAt(new Date(a.getTime() + HOUR), 'cluster:a2');
    await recordAt(new Date(a.getTime() + 2 * HOUR), 'cluster:a3');
    await recordAt(b, 'cluster:b1');
    await recordAt(new Date(b.getTime() + HOUR), 'cluster:b2');
    await audit.record({
      actor: 'user:alice',
      action: 'cluster.created',
      scope: 'cluster:now',
      origin: null,
    });

    // The first archive ends inside month A: A holds events not archived yet, so it stays; a1 goes by row.
    const first = await archiveAndPrune(new Date(a.getTime() + HOUR / 2));
    expect(first.pruned).toBe(1);
    expect(await months()).toEqual(expect.arrayContaining([partName(a), partName(b)]));
    const scopes = async () =>
      (await db.prisma.auditEvent.findMany({ orderBy: { id: 'asc' } })).map((e) => e.scope);
    expect(await scopes()).toEqual([
      'cluster:a2',
      'cluster:a3',
      'cluster:b1',
      'cluster:b2',
      'cluster:now',
      'hub',
    ]);
    expect(await audit.verify({ full: true })).toMatchObject({ valid: true, checked: 6, unchained: 0 });

    // Archived through month B: both months go whole, the chain still verifies from the checkpoint.
    const second = await archiveAndPrune(monthStart(now));
    expect(second.pruned).toBe(4);
    const left = await months();
    expect(left).not.toContain(partName(a));
    expect(left).not.toContain(partName(b));
    expect(left).toContain(partName(now));
    expect(await scopes()).toEqual(['cluster:now', 'hub', 'hub']);
    expect(await audit.verify({ full: true })).toMatchObject({ valid: true, checked: 3, unchained: 0 });
    // Appending goes on from the tail, and verifies.
    await audit.record({
      actor: 'user:alice',
      action: 'cluster.created',
      scope: 'cluster:after',
      origin: null,
    });
    expect(await audit.verify({ full: true })).toMatchObject({ valid: true, checked: 4, unchained: 0 });
  });
});
