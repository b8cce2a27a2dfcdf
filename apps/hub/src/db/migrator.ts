import { createHash, randomUUID } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import type { SqlRunner } from './sql-runner.js';

/** prisma/migrations at the repository root; src/db and dist/db sit at the same depth. */
export const MIGRATIONS_DIR = fileURLToPath(new URL('../../../../prisma/migrations/', import.meta.url));

// Any constant works as long as every hub uses the same one: it serialises concurrent start-ups.
const MIGRATION_LOCK_KEY = 72_616_421;

export interface Migration {
  name: string;
  sql: string;
  checksum: string;
}

export class MigrationError extends Error {
  override readonly name = 'MigrationError';
  constructor(
    readonly migration: string,
    message: string,
  ) {
    super(`migration ${migration}: ${message}`);
  }
}

export async function readMigrations(dir: string = MIGRATIONS_DIR): Promise<Migration[]> {
  const entries = await readdir(dir, { withFileTypes: true });
  const names = entries
    .filter((e) => e.isDirectory())
    .map((e) => e.name)
    .sort();
  const out: Migration[] = [];
  for (const name of names) {
    const sql = await readFile(`${dir}/${name}/migration.sql`, 'utf8');
    // Prisma's checksum is the sha256 of the file, so `prisma migrate status` agrees with us.
    out.push({ name, sql, checksum: createHash('sha256').update(sql).digest('hex') });
  }
  return out;
}

const CREATE_TABLE = `CREATE TABLE IF NOT EXISTS "_prisma_migrations" (
  "id" VARCHAR(36) PRIMARY KEY NOT NULL,
  "checksum" VARCHAR(64) NOT NULL,
  "finished_at" TIMESTAMPTZ,
  "migration_name" VARCHAR(255) NOT NULL,
  "logs" TEXT,
  "rolled_back_at" TIMESTAMPTZ,
  "started_at" TIMESTAMPTZ NOT NULL DEFAULT now(),
  "applied_steps_count" INTEGER NOT NULL DEFAULT 0
)`;

/**
 * Applies pending migrations, recorded in Prisma's standard `_prisma_migrations` table so the Prisma
 * CLI sees the same history. Each migration runs in its own transaction; a session advisory lock makes
 * two hubs starting at once take turns (the second finds nothing left to do).
 * Returns the names it applied.
 */
export async function applyMigrations(
  runner: SqlRunner,
  migrations: Migration[],
  opts: { advisoryLock: boolean },
): Promise<string[]> {
  if (opts.advisoryLock) await runner.query('SELECT pg_advisory_lock($1)', [MIGRATION_LOCK_KEY]);
  try {
    await runner.exec(CREATE_TABLE);
    const rows = await runner.query<{
      migration_name: string;
      checksum: string;
      finished_at: unknown;
      rolled_back_at: unknown;
    }>('SELECT migration_name, checksum, finished_at, rolled_back_at FROM "_prisma_migrations"');
    const done = new Set(rows.filter((r) => r.finished_at != null).map((r) => r.migration_name));
    // A migration edited after it ran means this database and a fresh one built from the same files
    // differ in ways nobody can see: refuse to start rather than run on a schema no file describes.
    const files = new Map(migrations.map((m) => [m.name, m.checksum]));
    for (const r of rows) {
      const file = files.get(r.migration_name);
      if (r.finished_at == null || file === undefined || file === r.checksum) continue;
      throw new MigrationError(
        r.migration_name,
        `prisma/migrations/${r.migration_name}/migration.sql was changed after it was applied ` +
          `(checksum ${r.checksum.slice(0, 12)}… in the database, ${file.slice(0, 12)}… in the file): ` +
          'restore the file as it was; a schema change goes in a new migration',
      );
    }
    const failed = rows.find((r) => r.finished_at == null && r.rolled_back_at == null);
    if (failed) {
      throw new MigrationError(
        failed.migration_name,
        'a previous attempt failed half-way; fix the database, then mark it rolled back (prisma migrate resolve --rolled-back)',
      );
    }
    const applied: string[] = [];
    for (const m of migrations) {
      if (done.has(m.name)) continue;
      try {
        await runner.exec('BEGIN');
        await runner.exec(m.sql);
        await runner.query(
          `INSERT INTO "_prisma_migrations" (id, checksum, finished_at, migration_name, applied_steps_count)
           VALUES ($1, $2, now(), $3, 1)`,
          [randomUUID(), m.checksum, m.name],
        );
        await runner.exec('COMMIT');
      } catch (e) {
        await runner.exec('ROLLBACK');
        throw new MigrationError(m.name, e instanceof Error ? e.message : String(e));
      }
      applied.push(m.name);
    }
    return applied;
  } finally {
    if (opts.advisoryLock) await runner.query('SELECT pg_advisory_unlock($1)', [MIGRATION_LOCK_KEY]);
  }
}
