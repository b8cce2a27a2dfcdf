import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LocalFleet } from '@flotilla/cli/fleet';
import {
  createTestDatabase,
  deleteRedisPrefix,
  TEST_REDIS_URL,
  uniqueName,
} from '../support/test-services.js';

// A real agent process against a real hub whose agent credentials live 6 s: the agent must rotate
// on its own, again and again, store each new credential, and never fall back to registering.

describe('agent credential rotation, end to end', () => {
  const work = mkdtempSync(join(tmpdir(), 'flotilla-rotation-'));
  const redisPrefix = uniqueName('flotilla-rotation');
  let db: { url: string; drop: () => Promise<void> };
  let fleet: LocalFleet;

  async function query(text: string): Promise<Record<string, unknown>[]> {
    const client = new pg.Client({ connectionString: db.url });
    await client.connect();
    try {
      return (await client.query(text)).rows as Record<string, unknown>[];
    } finally {
      await client.end();
    }
  }

  beforeAll(async () => {
    db = await createTestDatabase('flotilla_rotation');
    fleet = await LocalFleet.start({
      workDir: join(work, 'fleet'),
      clusters: 1,
      namePrefix: 'rot-',
      databaseUrl: db.url,
      redisUrl: TEST_REDIS_URL,
      redisPrefix,
      pollSeconds: 1,
      hubEnv: { AGENT_CREDENTIAL_TTL_SECONDS: '6', AGENT_CREDENTIAL_ROTATION_GRACE_SECONDS: '2' },
    });
  }, 120_000);

  afterAll(async () => {
    await fleet?.stop();
    await db?.drop();
    await deleteRedisPrefix(redisPrefix);
    rmSync(work, { recursive: true, force: true });
  });

  it('rotates before expiry, stores the new credential, and stays registered', async () => {
    const cluster = fleet.clusters[0]!.name;
    // Each credential is due for rotation 4 s after it was issued: two rotations within ~10 s.
    await expect
      .poll(
        async () =>
          Number(
            (
              await query(
                `SELECT count(*) AS n FROM "AuditEvent" WHERE action = 'cluster.credential-rotated'`,
              )
            )[0]?.['n'],
          ),
        { timeout: 40_000, interval: 500 },
      )
      .toBeGreaterThanOrEqual(2);

    const [row] = await query(`SELECT "credentialHash", "lastSeenAt" FROM "Cluster"`);
    const stored = JSON.parse(
      readFileSync(join(work, 'fleet', 'agents', cluster, 'credential.json'), 'utf8'),
    ) as {
      credential: string;
      issuedAt?: string;
    };
    // The hub's current credential is the one on the agent's disk (or the agent is mid-rotation).
    const storedHash = createHash('sha256').update(stored.credential).digest('hex');
    const hashes = await query(`SELECT "credentialHash", "previousCredentialHash" FROM "Cluster"`);
    expect([hashes[0]?.['credentialHash'], hashes[0]?.['previousCredentialHash']]).toContain(storedHash);
    expect(stored.issuedAt).toMatch(/^\d{4}-/);
    expect(Date.now() - (row?.['lastSeenAt'] as Date).getTime()).toBeLessThan(15_000);
    // It never had to fall back on its (single-use, by now spent) bootstrap token.
    const registrations = await query(`SELECT actor FROM "AuditEvent" WHERE action = 'cluster.registered'`);
    expect(registrations).toEqual([{ actor: `agent:${cluster}` }]);
  });
});
