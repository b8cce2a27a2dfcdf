import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Database } from '../db/database.js';
import { createMigratedPglite } from '../testing/test-database.js';
import { SyncHistory, syncHistoryQuery } from './sync-history.service.js';

/**
 * The one-statement history query against what Prisma's `findMany` + `include` answered before it
 * (the reference below), on the embedded PostgreSQL: same items, same order, same pages.
 */
describe('SyncHistory (in-memory PGlite)', () => {
  let db: Database;
  let history: SyncHistory;
  const t0 = Date.parse('2026-03-01T00:00:00.000Z');

  beforeAll(async () => {
    db = await createMigratedPglite();
    history = new SyncHistory(db);
    const p = db.prisma;
    const [eu, us] = await Promise.all(['eu-1', 'us-1'].map((name) => p.cluster.create({ data: { name } })));
    const [web, api] = await Promise.all(
      ['web', 'api'].map((name) =>
        p.applicationSet.create({ data: { name, apiVersion: 'flotilla.dev/v1', spec: {} } }),
      ),
    );
    const targets = [
      { name: 'web-eu-1', cluster: eu!, appSet: web! },
      { name: 'web-us-1', cluster: us!, appSet: web! },
      { name: 'api-eu-1', cluster: eu!, appSet: api! },
    ];
    const made: { id: string; name: string; clusterId: string; appSetId: string; names: string[] }[] = [];
    for (const t of targets)
      made.push({
        names: [t.cluster.name, t.appSet.name],
        ...(await p.target.create({
          data: {
            name: t.name,
            appSetId: t.appSet.id,
            clusterId: t.cluster.id,
            namespace: 'default',
            repoUrl: 'https://example.com/apps.git',
            sourcePath: 'app',
            targetRevision: 'main',
            desiredRevision: 'a'.repeat(40),
            syncPolicy: {},
          },
        })),
      });
    const outcomes = ['Succeeded', 'Failed', 'Partial', 'Blocked'];
    const triggers = ['auto', 'self-heal', 'manual', 'rollback'];
    // 60 runs, three to a start time, so that paging has ties on startedAt to break by id.
    await p.syncRun.createMany({
      data: Array.from({ length: 60 }, (_, i) => {
        const t = made[i % 3]!;
        const startedAt = new Date(t0 + Math.floor(i / 3) * 60_000);
        return {
          targetId: t.id,
          clusterId: t.clusterId,
          appSetId: t.appSetId,
          targetName: t.name,
          clusterName: t.names[0]!,
          appSetName: t.names[1]!,
          revision: `rev-${i}`,
          bundleDigest: `sha256:${i}`,
          trigger: triggers[i % 4]!,
          outcome: outcomes[i % 4]!,
          message: i % 5 === 0 ? `message ${i}` : '',
          startedAt,
          finishedAt: new Date(startedAt.getTime() + 1234),
          resources: [{ kind: 'ConfigMap', name: `cm-${i}`, action: 'configured' }],
          agentReportId: `report-${i}`,
        };
      }),
    });
  });

  afterAll(async () => {
    await db?.close();
  });

  /** What Prisma's `findMany` answers for the same filter (names from the run's own columns). */
  async function reference(where: object, limit: number) {
    const rows = await db.prisma.syncRun.findMany({
      where,
      orderBy: [{ startedAt: 'desc' }, { id: 'desc' }],
      take: limit,
    });
    return rows.map((r) => ({
      id: r.id,
      target: r.targetName,
      cluster: r.clusterName,
      appSet: r.appSetName,
      revision: r.revision,
      bundleDigest: r.bundleDigest,
      trigger: r.trigger,
      outcome: r.outcome,
      message: r.message,
      startedAt: r.startedAt.toISOString(),
      finishedAt: r.finishedAt.toISOString(),
      resources: r.resources,
      reportId: r.agentReportId,
    }));
  }

  const list = (q: Record<string, string>) => history.list(syncHistoryQuery.parse(q));

  it('answers each filter with the same items, in the same order, as Prisma findMany', async () => {
    const eu = await db.prisma.cluster.findUniqueOrThrow({ where: { name: 'eu-1' } });
    const web = await db.prisma.applicationSet.findUniqueOrThrow({ where: { name: 'web' } });
    const from = new Date(t0 + 5 * 60_000);
    const to = new Date(t0 + 12 * 60_000);
    const cases: [Record<string, string>, object][] = [
      [{}, {}],
      [{ cluster: 'eu-1' }, { clusterId: eu.id }],
      [
        { appSet: 'web', outcome: 'Failed,Partial' },
        { appSetId: web.id, outcome: { in: ['Failed', 'Partial'] } },
      ],
      // One statement per outcome of an appset, merged: named twice, or with other filters.
      [
        { appSet: 'web', outcome: 'Partial,Failed,Partial' },
        { appSetId: web.id, outcome: { in: ['Failed', 'Partial'] } },
      ],
      [
        { appSet: 'web', outcome: 'Blocked' },
        { appSetId: web.id, outcome: 'Blocked' },
      ],
      [
        { appSet: 'web', cluster: 'eu-1', outcome: 'Succeeded,Failed', trigger: 'auto,self-heal,manual' },
        {
          appSetId: web.id,
          clusterId: eu.id,
          outcome: { in: ['Succeeded', 'Failed'] },
          trigger: { in: ['auto', 'self-heal', 'manual'] },
        },
      ],
      [
        { target: 'web-us-1', trigger: 'auto,manual' },
        { targetName: 'web-us-1', trigger: { in: ['auto', 'manual'] } },
      ],
      [
        { cluster: 'eu-1', from: from.toISOString(), to: to.toISOString() },
        { clusterId: eu.id, startedAt: { gte: from, lt: to } },
      ],
    ];
    for (const [query, where] of cases) {
      const page = await list({ ...query, limit: '500' });
      const expected = await reference(where, 500);
      expect(expected.length).toBeGreaterThan(0);
      expect(page).toEqual({ items: expected, nextCursor: null });
    }
    // Every item has the full shape, JSON and timestamps as the API sends them.
    const [newest] = (await list({ target: 'web-us-1', limit: '1' })).items;
    expect(newest).toEqual({
      id: expect.any(String) as string,
      target: 'web-us-1',
      cluster: 'us-1',
      appSet: 'web',
      revision: 'rev-58',
      bundleDigest: 'sha256:58',
      trigger: 'manual',
      outcome: 'Partial',
      message: '',
      startedAt: '2026-03-01T00:19:00.000Z',
      finishedAt: '2026-03-01T00:19:01.234Z',
      resources: [{ kind: 'ConfigMap', name: 'cm-58', action: 'configured' }],
      reportId: 'report-58',
    });
  });

  it('pages through ties on startedAt without skipping or repeating a run', async () => {
    for (const filter of <Record<string, string>[]>[
      {},
      { cluster: 'eu-1' },
      { appSet: 'web', outcome: 'Succeeded,Failed,Partial' },
      { appSet: 'web', outcome: 'Failed' },
    ]) {
      const all = (await list({ ...filter, limit: '500' })).items.map((r) => r.id);
      const seen: string[] = [];
      let cursor: string | null = null;
      for (let i = 0; i < 100; i++) {
        const page: Awaited<ReturnType<SyncHistory['list']>> = await list({
          ...filter,
          limit: '4',
          ...(cursor && { cursor }),
        });
        seen.push(...page.items.map((r) => r.id));
        cursor = page.nextCursor;
        if (!cursor) break;
      }
      expect(seen).toEqual(all);
    }
  });

  it('streams every match for an export, the same runs in the same order as the pages', async () => {
    const { limit: _limit, ...eu } = syncHistoryQuery.parse({ cluster: 'eu-1' });
    const streamed = [];
    for await (const r of history.stream(eu)) streamed.push(r);
    const page = await list({ cluster: 'eu-1', limit: '500' });
    expect(page.items.length).toBeGreaterThan(1);
    expect(streamed).toEqual(page.items);
    const firstTwo = [];
    for await (const r of history.stream({ ...eu, limit: 2 })) firstTwo.push(r);
    expect(firstTwo).toEqual(page.items.slice(0, 2));
  });

  it('an unknown cluster, appset or target name is an empty page, not an error', async () => {
    for (const q of <Record<string, string>[]>[
      { cluster: 'nowhere' },
      { appSet: 'nothing' },
      { target: 'nobody' },
    ])
      expect(await list(q)).toEqual({ items: [], nextCursor: null });
  });
});
