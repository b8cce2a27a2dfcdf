import { randomBytes } from 'node:crypto';
import { PGlite } from '@electric-sql/pglite';
import pg from 'pg';
import { Database } from '../db/database.js';

export const DEFAULT_TEST_DATABASE_URL = 'postgresql://postgres@127.0.0.1:5432/postgres';

export interface TestPostgres {
  /** Connection URL of the new, empty, uniquely named database. */
  url: string;
  name: string;
  /** Drops the database (forcing out any connection still open). */
  drop(): Promise<void>;
}

/**
 * A throwaway database on a real PostgreSQL server (`TEST_DATABASE_URL`, or the given admin URL).
 * The hub migrates it when it opens it; `migrateTestPostgres` does it without a hub.
 */
export async function createTestPostgres(
  adminUrl: string = process.env['TEST_DATABASE_URL'] ?? DEFAULT_TEST_DATABASE_URL,
): Promise<TestPostgres> {
  const name = `flotilla_test_${Date.now().toString(36)}_${randomBytes(4).toString('hex')}`;
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  try {
    await admin.query(`CREATE DATABASE "${name}"`);
  } finally {
    await admin.end();
  }
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    name,
    drop: async () => {
      const c = new pg.Client({ connectionString: adminUrl });
      await c.connect();
      try {
        await c.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
      } finally {
        await c.end();
      }
    },
  };
}

/** Opens (and so migrates) a database the way the hub does, for tests that need rows but no hub. */
export async function openTestDatabase(url: string): Promise<Database> {
  return Database.open({ kind: 'postgres', url });
}

/** An in-memory PGlite database with every migration applied: for service tests with no server. */
export async function createMigratedPglite(): Promise<Database> {
  const lite = new PGlite();
  await lite.waitReady;
  return Database.fromPglite(lite, async () => lite.close());
}

/** One throwaway database opened twice: two connection pools that stand for two hub replicas. */
export interface TwoReplicas {
  one: Database;
  two: Database;
  /** Closes both pools, then drops the database. */
  close(): Promise<void>;
}

export async function openTwoReplicas(): Promise<TwoReplicas> {
  const pg = await createTestPostgres();
  const one = await openTestDatabase(pg.url);
  const two = await openTestDatabase(pg.url);
  return {
    one,
    two,
    close: async () => {
      await one.close();
      await two.close();
      await pg.drop();
    },
  };
}
