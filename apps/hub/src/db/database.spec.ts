import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestPostgres, type TestPostgres } from '../testing/test-database.js';
import { Database } from './database.js';
import { readMigrations } from './migrator.js';

describe('Database.open on PostgreSQL', () => {
  let pg: TestPostgres;

  beforeAll(async () => {
    pg = await createTestPostgres();
  });
  afterAll(async () => {
    await pg?.drop();
  });

  it('lets two hubs starting at once migrate the same database: each migration is applied once', async () => {
    const [a, b] = await Promise.all([
      Database.open({ kind: 'postgres', url: pg.url }),
      Database.open({ kind: 'postgres', url: pg.url }),
    ]);
    try {
      const rows = await a.sql.query<{ migration_name: string }>(
        'SELECT migration_name FROM "_prisma_migrations" ORDER BY migration_name',
      );
      expect(rows.map((r) => r.migration_name)).toEqual((await readMigrations()).map((m) => m.name));
      await a.prisma.cluster.create({ data: { name: 'seen-by-both' } });
      expect((await b.prisma.cluster.findUnique({ where: { name: 'seen-by-both' } }))?.name).toBe(
        'seen-by-both',
      );
    } finally {
      await Promise.all([a.close(), b.close()]);
    }
  });
});

describe('Database.open on embedded PGlite', () => {
  let dir: string;

  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'flotilla-pglite-'));
  });
  afterAll(() => {
    rmSync(dir, { recursive: true, force: true });
  });

  it('keeps its data across restarts and does not migrate twice', { timeout: 120_000 }, async () => {
    const first = await Database.open({ kind: 'pglite', dir });
    await first.prisma.cluster.create({ data: { name: 'persisted', labels: { env: 'demo' } } });
    await first.close();

    const second = await Database.open({ kind: 'pglite', dir });
    try {
      const c = await second.prisma.cluster.findUnique({ where: { name: 'persisted' } });
      expect(c?.labels).toEqual({ env: 'demo' });
      const rows = await second.sql.query<{ n: number }>(
        'SELECT count(*)::int AS n FROM "_prisma_migrations"',
      );
      expect(rows[0]?.n).toBe((await readMigrations()).length);
    } finally {
      await second.close();
    }
  });
});
