import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pgDriver from 'pg';
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

  it('survives PostgreSQL dropping every connection: no crash, the next queries reconnect', async () => {
    const db = await Database.open({ kind: 'postgres', url: pg.url });
    try {
      await db.ping();
      await db.prisma.cluster.count();
      // What a restart or failover does to the hub's sessions, idle ones included (their 'error'
      // event used to end the process).
      const admin = new pgDriver.Client({ connectionString: pg.url });
      await admin.connect();
      try {
        const killed = await admin.query<{ n: number }>(
          `SELECT count(pg_terminate_backend(pid))::int AS n FROM pg_stat_activity
            WHERE datname = current_database() AND pid <> pg_backend_pid()`,
        );
        expect(killed.rows[0]?.n).toBeGreaterThan(0);
      } finally {
        await admin.end();
      }
      // Let the idle connections see their termination before the next query.
      await new Promise((r) => setTimeout(r, 200));
      await expect(db.ping()).resolves.toBeUndefined();
      await db.prisma.cluster.create({ data: { name: 'after-reconnect' } });
      expect(await db.prisma.cluster.count({ where: { name: 'after-reconnect' } })).toBe(1);
    } finally {
      await db.close();
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
