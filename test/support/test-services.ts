import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { deleteRedisKeys } from '@flotilla/cli/fleet';

/** Real PostgreSQL and Redis for cross-app tests; each test file gets its own database and key prefix. */
export const TEST_DATABASE_URL =
  process.env['TEST_DATABASE_URL'] ?? 'postgresql://postgres@127.0.0.1:5432/postgres';
export const TEST_REDIS_URL = process.env['TEST_REDIS_URL'] ?? 'redis://127.0.0.1:6379';

export function uniqueName(prefix: string): string {
  return `${prefix}_${Date.now().toString(36)}_${randomBytes(4).toString('hex')}`;
}

/** Creates an empty database on the test server; the hub applies its migrations at start. */
export async function createTestDatabase(
  prefix = 'flotilla_e2e',
): Promise<{ url: string; drop: () => Promise<void> }> {
  const name = uniqueName(prefix);
  const admin = new pg.Client({ connectionString: TEST_DATABASE_URL });
  await admin.connect();
  try {
    await admin.query(`CREATE DATABASE "${name}"`);
  } finally {
    await admin.end();
  }
  const url = new URL(TEST_DATABASE_URL);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    drop: async () => {
      const c = new pg.Client({ connectionString: TEST_DATABASE_URL });
      await c.connect();
      try {
        await c.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
      } finally {
        await c.end();
      }
    },
  };
}

/** Deletes every key under a BullMQ prefix, so a test leaves the shared Redis as it found it. */
export function deleteRedisPrefix(prefix: string, url = TEST_REDIS_URL): Promise<void> {
  return deleteRedisKeys(url, prefix);
}
