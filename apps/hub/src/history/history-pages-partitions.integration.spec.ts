import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AuditLog } from '../audit/audit.service.js';
import type { Database } from '../db/database.js';
import { ensureMonthPartitions } from '../db/partitions.js';
import { createTestPostgres, openTestDatabase, type TestPostgres } from '../testing/test-database.js';
import { SyncHistory, syncHistoryQuery } from './sync-history.service.js';

// Keyset pages over the monthly partitions, on real PostgreSQL: sync runs are partitioned by the
// hub's createdAt but paged by the agent's startedAt, and the two disagree — a report that arrives a
// month late, an agent clock ahead of the hub's, equal start times in different months. Whatever
// the partitions, walking every page must give every row once, in order. (The queries put no bound
// on the partition key; a bound added to prune months must keep these passing.)

const DAY = 24 * 3600_000;
const month = (y: number, m: number) => new Date(Date.UTC(y, m - 1, 1));

describe('history and audit pages across month partitions (PostgreSQL)', () => {
  let server: TestPostgres | undefined;
  let db: Database;
  const runs: { id: string; startedAt: Date; cluster: string; outcome: string; appSet: string }[] = [];

  beforeAll(async () => {
    server = await createTestPostgres();
    db = await openTestDatabase(server.url);
    for (const table of ['SyncRun', 'AuditEvent'] as const)
      await ensureMonthPartitions(db.prisma, table, month(2026, 1), 5);
    // 90 runs stored over January to April, two a day; their start times disagree with when they
    // were stored in every way the agent can make them.
    for (let i = 0; i < 90; i++) {
      const createdAt = new Date(month(2026, 1).getTime() + i * 1.3 * DAY + 3600_000);
      const skew =
        i % 9 === 0
          ? -35 * DAY // reported a month late: started in an earlier month than stored
          : i % 7 === 0
            ? 2 * DAY // the agent's clock ahead: started "after" the hub stored it
            : -(i % 5) * 60_000;
      // Every tenth run shares its start time with the one before it, across whatever months.
      const startedAt = i % 10 === 1 ? runs[i - 1]!.startedAt : new Date(createdAt.getTime() + skew);
      const run = {
        id: `run-${String(i).padStart(3, '0')}-${(i * 7919) % 97}`,
        startedAt,
        cluster: `cluster-${i % 3}`,
        outcome: i % 4 === 0 ? 'Failed' : i % 4 === 1 ? 'Partial' : 'Succeeded',
        appSet: `appset-${i % 2}`,
      };
      runs.push(run);
      await db.prisma.$executeRaw`
        INSERT INTO "SyncRun" ("id", "targetId", "clusterId", "appSetId", "targetName", "clusterName", "appSetName",
                               "revision", "bundleDigest", "trigger", "outcome", "startedAt", "finishedAt",
                               "agentReportId", "createdAt")
        VALUES (${run.id}, 't', ${run.cluster}, ${run.appSet}, 'web', ${run.cluster}, ${run.appSet}, 'c0ffee',
                'sha256:any', 'auto', ${run.outcome}, ${startedAt.toISOString()}::timestamp,
                ${startedAt.toISOString()}::timestamp, ${`report-${run.id}`}, ${createdAt.toISOString()}::timestamp)`;
    }
    // appset-0 is in the inventory (read by id, an index branch per outcome); appset-1 is known only
    // by the name copied on its runs, as after its deletion.
    await db.prisma.applicationSet.create({
      data: { id: 'appset-0', name: 'appset-0', apiVersion: 'flotilla.dev/v1', spec: {} },
    });
    const parts = await db.sql.query<{ n: string }>(
      'SELECT count(DISTINCT tableoid)::text AS n FROM "SyncRun"',
    );
    expect(Number(parts[0]?.n)).toBe(4);
  }, 120_000);

  afterAll(async () => {
    await db?.close();
    await server?.drop();
  });

  /** Every page of a sync history query, 7 runs a page, as a client follows nextCursor. */
  const everyPage = async (filter: Record<string, string>) => {
    const history = new SyncHistory(db);
    const ids: string[] = [];
    let cursor: string | undefined;
    do {
      const page = await history.list(
        syncHistoryQuery.parse({ ...filter, limit: '7', ...(cursor && { cursor }) }),
      );
      ids.push(...page.items.map((r) => r.id));
      cursor = page.nextCursor ?? undefined;
    } while (cursor);
    return ids;
  };
  /** The runs a filter matches, newest first by (startedAt, id): what the pages must add up to. */
  const expected = (keep: (r: (typeof runs)[number]) => boolean) =>
    runs
      .filter(keep)
      .sort((a, b) => b.startedAt.getTime() - a.startedAt.getTime() || (a.id < b.id ? 1 : -1))
      .map((r) => r.id);

  it('pages through every sync run once, in order, whichever month stored it', async () => {
    expect(await everyPage({})).toEqual(expected(() => true));
  });

  it('and with the filters whose indexes the pages read: cluster, appset + outcomes, a time range', async () => {
    expect(await everyPage({ cluster: 'cluster-1' })).toEqual(expected((r) => r.cluster === 'cluster-1'));
    for (const appSet of ['appset-0', 'appset-1']) {
      expect(await everyPage({ appSet, outcome: 'Failed,Partial' })).toEqual(
        expected((r) => r.appSet === appSet && r.outcome !== 'Succeeded'),
      );
      // An outcome named twice is still each run once.
      expect(await everyPage({ appSet, outcome: 'Partial,Failed,Partial' })).toEqual(
        expected((r) => r.appSet === appSet && r.outcome !== 'Succeeded'),
      );
      expect(await everyPage({ appSet, outcome: 'Failed' })).toEqual(
        expected((r) => r.appSet === appSet && r.outcome === 'Failed'),
      );
      expect(await everyPage({ appSet, cluster: 'cluster-2', outcome: 'Failed,Succeeded' })).toEqual(
        expected((r) => r.appSet === appSet && r.cluster === 'cluster-2' && r.outcome !== 'Partial'),
      );
    }
    const from = month(2026, 2);
    const to = month(2026, 3);
    expect(await everyPage({ from: from.toISOString(), to: to.toISOString() })).toEqual(
      expected((r) => r.startedAt >= from && r.startedAt < to),
    );
  });

  it('pages through every audit event once, by id and by time, across the months', async () => {
    // Events stamped in January to April, written as one batch: ids in insertion order.
    const at = Array.from({ length: 40 }, (_, i) => new Date(month(2026, 1).getTime() + i * 3 * DAY));
    for (const [i, when] of at.entries())
      await db.prisma.$executeRaw`
        INSERT INTO "AuditEvent" ("at", "actor", "action", "scope", "details")
        VALUES (${when.toISOString()}::timestamp, ${i % 2 ? 'user:ann' : 'agent'}, 'sync.succeeded', ${`target:${i}`}, '{}')`;
    const audit = new AuditLog(db);
    const pages = async (q: { actor?: string; from?: Date; to?: Date }) => {
      const ids: string[] = [];
      let cursor: string | undefined;
      do {
        const page = await audit.list({ ...q, limit: 7, ...(cursor && { cursor }) });
        ids.push(...page.items.map((e) => e.id));
        cursor = page.nextCursor ?? undefined;
      } while (cursor);
      return ids;
    };
    const rows = await db.prisma.auditEvent.findMany({ orderBy: { id: 'desc' } });
    expect(await pages({})).toEqual(rows.map((r) => r.id.toString()));
    expect(await pages({ actor: 'user:ann' })).toEqual(
      rows.filter((r) => r.actor === 'user:ann').map((r) => r.id.toString()),
    );
    const from = new Date(month(2026, 1).getTime() + 20 * DAY);
    const to = new Date(month(2026, 3).getTime() + 10 * DAY);
    expect(await pages({ from, to })).toEqual(
      rows.filter((r) => r.at >= from && r.at < to).map((r) => r.id.toString()),
    );
  });
});
