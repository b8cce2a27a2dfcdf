import { PGlite } from '@electric-sql/pglite';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SqlRunner } from './sql-runner.js';
import { applyMigrations, MigrationError, readMigrations, type Migration } from './migrator.js';

describe('applyMigrations (on in-memory PGlite)', () => {
  let lite: PGlite;
  let sql: SqlRunner;

  beforeAll(async () => {
    lite = new PGlite();
    await lite.waitReady;
    sql = {
      exec: async (text) => {
        await lite.exec(text);
      },
      query: async <T>(text: string, params: unknown[] = []) => (await lite.query<T>(text, params)).rows,
    };
  });
  afterAll(async () => {
    await lite.close();
  });

  it('applies the checked-in migrations once and records them as Prisma does', async () => {
    const migrations = await readMigrations();
    expect(migrations.map((m) => m.name)).toContain('20261202120000_init');
    expect(await applyMigrations(sql, migrations, { advisoryLock: false })).toEqual(
      migrations.map((m) => m.name),
    );
    expect(await applyMigrations(sql, migrations, { advisoryLock: false })).toEqual([]);
    const rows = await sql.query<{ migration_name: string; checksum: string; applied_steps_count: number }>(
      'SELECT migration_name, checksum, applied_steps_count FROM "_prisma_migrations" ORDER BY migration_name',
    );
    expect(rows).toEqual(
      migrations.map((m) => ({ migration_name: m.name, checksum: m.checksum, applied_steps_count: 1 })),
    );
    const tables = await sql.query<{ tablename: string }>(
      "SELECT tablename FROM pg_tables WHERE schemaname = 'public' ORDER BY 1",
    );
    expect(tables.map((t) => t.tablename)).toEqual(
      expect.arrayContaining([
        'Cluster',
        'BootstrapToken',
        'Target',
        'Bundle',
        'SyncRun',
        'ProcessedReport',
        'AuditEvent',
      ]),
    );
  });

  it('rolls a failing migration back whole and names it', async () => {
    const bad: Migration = {
      name: '29990101000000_bad',
      sql: 'CREATE TABLE "Half" (id int); SELECT nonsense_fn();',
      checksum: 'x',
    };
    await expect(applyMigrations(sql, [bad], { advisoryLock: false })).rejects.toBeInstanceOf(MigrationError);
    const half = await sql.query("SELECT 1 FROM pg_tables WHERE tablename = 'Half'");
    expect(half).toEqual([]);
    const recorded = await sql.query('SELECT 1 FROM "_prisma_migrations" WHERE migration_name = $1', [
      bad.name,
    ]);
    expect(recorded).toEqual([]);
  });

  it('refuses to start on a database whose applied migration no longer matches its file', async () => {
    const migrations = await readMigrations();
    await applyMigrations(sql, migrations, { advisoryLock: false });
    const [first, ...rest] = migrations;
    const edited: Migration = { ...first!, sql: `${first!.sql}\n-- edited`, checksum: 'f'.repeat(64) };
    const refused = await applyMigrations(sql, [edited, ...rest], { advisoryLock: false }).catch(
      (e: unknown) => e,
    );
    expect(refused).toBeInstanceOf(MigrationError);
    expect((refused as MigrationError).message).toContain(
      `migration ${first!.name}: prisma/migrations/${first!.name}/migration.sql was changed after it was applied`,
    );
    // Nothing was recorded or run: the files as they were still apply cleanly (nothing left to do).
    expect(await applyMigrations(sql, migrations, { advisoryLock: false })).toEqual([]);
  });
});
