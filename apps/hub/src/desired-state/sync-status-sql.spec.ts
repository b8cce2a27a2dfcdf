import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Database } from '../db/database.js';
import { createMigratedPglite } from '../testing/test-database.js';
import { SYNC_FACTS_SQL, syncFactsOf, syncStatusOf, type SyncFacts } from './sync-status.js';

/**
 * The fleet view has PostgreSQL compute sync facts for every target (SYNC_FACTS_SQL); the rest of
 * the hub reads them off rows (syncFactsOf). Both must say the same of every kind of target.
 */
describe('SYNC_FACTS_SQL agrees with syncFactsOf (in-memory PGlite)', () => {
  let db: Database;
  const A = 'a'.repeat(40);
  const B = 'b'.repeat(40);
  const cases: Record<
    string,
    {
      policy: unknown;
      synced?: { revision: string | null; digest: string | null; at: number };
      digest?: string | null;
      comparison?: { revision: string; digest: string; inSync: boolean; at: number };
    }
  > = {
    'never synced, automated': { policy: { automated: { prune: true } } },
    'synced at the desired revision and bundle': {
      policy: {},
      synced: { revision: A, digest: 'sha256:1', at: 20 },
    },
    'synced at another revision': { policy: {}, synced: { revision: B, digest: 'sha256:1', at: 20 } },
    'synced at another bundle': { policy: {}, synced: { revision: A, digest: 'sha256:0', at: 20 } },
    'no bundle yet, none synced': { policy: {}, digest: null, synced: { revision: A, digest: null, at: 20 } },
    'no bundle yet, one synced': {
      policy: {},
      digest: null,
      synced: { revision: A, digest: 'sha256:1', at: 20 },
    },
    'manual, never synced, compared in sync': {
      policy: { automated: false },
      comparison: { revision: A, digest: 'sha256:1', inSync: true, at: 10 },
    },
    'manual, compared at another revision': {
      policy: { automated: false },
      comparison: { revision: B, digest: 'sha256:1', inSync: true, at: 10 },
    },
    'manual, compared at another bundle': {
      policy: { automated: false },
      comparison: { revision: A, digest: 'sha256:0', inSync: false, at: 10 },
    },
    'manual, drift after a sync': {
      policy: { automated: false },
      synced: { revision: A, digest: 'sha256:1', at: 20 },
      comparison: { revision: A, digest: 'sha256:1', inSync: false, at: 30 },
    },
    'manual, a sync after the comparison': {
      policy: { automated: false },
      synced: { revision: A, digest: 'sha256:1', at: 20 },
      comparison: { revision: A, digest: 'sha256:1', inSync: false, at: 10 },
    },
    'automated with a comparison': {
      policy: { automated: { selfHeal: true } },
      comparison: { revision: A, digest: 'sha256:1', inSync: false, at: 10 },
    },
    'manual, compared with no bundle': {
      policy: { automated: false },
      digest: null,
      comparison: { revision: A, digest: 'sha256:1', inSync: true, at: 10 },
    },
  };

  beforeAll(async () => {
    db = await createMigratedPglite();
    const p = db.prisma;
    const cluster = await p.cluster.create({ data: { name: 'eu-1' } });
    const appSet = await p.applicationSet.create({
      data: { name: 'web', apiVersion: 'flotilla.dev/v1', spec: {} },
    });
    for (const [name, c] of Object.entries(cases)) {
      const t = await p.target.create({
        data: {
          name,
          appSetId: appSet.id,
          clusterId: cluster.id,
          namespace: 'default',
          repoUrl: 'https://example.com/apps.git',
          sourcePath: 'app',
          targetRevision: 'main',
          desiredRevision: A,
          bundleDigest: c.digest === undefined ? 'sha256:1' : c.digest,
          syncPolicy: c.policy as object,
          lastSyncedRevision: c.synced?.revision ?? null,
          lastSyncedDigest: c.synced?.digest ?? null,
          lastSyncedAt: c.synced ? new Date(c.synced.at) : null,
        },
      });
      if (c.comparison)
        await p.targetComparison.create({
          data: {
            targetId: t.id,
            observedAt: new Date(c.comparison.at),
            revision: c.comparison.revision,
            bundleDigest: c.comparison.digest,
            inSync: c.comparison.inSync,
            compared: 1,
            reportId: `report-${name}`,
          },
        });
    }
  });
  afterAll(async () => {
    await db?.close();
  });

  it('for every case', async () => {
    const fromSql = await db.prisma.$queryRaw<(SyncFacts & { name: string })[]>`
      SELECT t."name", ${SYNC_FACTS_SQL}
        FROM "Target" t LEFT JOIN "TargetComparison" c ON c."targetId" = t."id"`;
    const rows = await db.prisma.target.findMany({
      include: { comparison: true },
    });
    expect(fromSql).toHaveLength(Object.keys(cases).length);
    const statuses = new Set<string>();
    for (const row of rows) {
      const sql = fromSql.find((r) => r.name === row.name)!;
      const { name: _name, ...facts } = sql;
      expect({ [row.name]: facts }).toEqual({ [row.name]: syncFactsOf(row) });
      statuses.add(syncStatusOf(row));
    }
    // The cases reach every status, so the facts that decide each are all exercised.
    expect([...statuses].sort()).toEqual(['OutOfSync', 'Synced', 'Unknown']);
  });
});
