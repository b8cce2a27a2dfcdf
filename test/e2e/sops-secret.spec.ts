import { mkdtempSync, readFileSync, rmSync, writeFileSync, mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CoreV1Api, KubeConfig } from '@kubernetes/client-node';
import { generateX25519Identity, identityToRecipient } from 'age-encryption';
import pg from 'pg';
import { simpleGit } from 'simple-git';
import { stringify } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LocalFleet } from '@flotilla/cli/fleet';
import { encryptSopsObject } from '@flotilla/sops';
import {
  createTestDatabase,
  deleteRedisPrefix,
  TEST_REDIS_URL,
  uniqueName,
} from '../support/test-services.js';

const PLAINTEXT = 'hunter2-never-at-the-hub';

/**
 * A SOPS-encrypted Secret travels Git → hub → agent as ciphertext; only the agent, with a key the
 * hub never sees, decrypts it. Afterwards neither the hub's database nor its logs hold the value.
 */
describe('SOPS secrets end to end', () => {
  const work = mkdtempSync(join(tmpdir(), 'flotilla-sops-e2e-'));
  const redisPrefix = uniqueName('flotilla-sops');
  let db: { url: string; drop: () => Promise<void> };
  let fleet: LocalFleet;
  const repoDir = join(work, 'repo');

  beforeAll(async () => {
    const identity = await generateX25519Identity();
    const secret = await encryptSopsObject(
      {
        apiVersion: 'v1',
        kind: 'Secret',
        metadata: { name: 'db', namespace: 'payments' },
        stringData: { password: PLAINTEXT },
      },
      { recipients: [await identityToRecipient(identity)], encryptedRegex: '^(data|stringData)$' },
    );
    mkdirSync(join(repoDir, 'app'), { recursive: true });
    writeFileSync(
      join(repoDir, 'app/namespace.yaml'),
      stringify({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'payments' } }),
    );
    writeFileSync(join(repoDir, 'app/secret.sops.yaml'), stringify(secret));
    const git = simpleGit(repoDir);
    await git.init(['--initial-branch=main']);
    await git.addConfig('user.name', 'E2E').addConfig('user.email', 'e2e@flotilla.local');
    await git.add('.').commit('encrypted secret');

    db = await createTestDatabase('flotilla_sops');
    fleet = await LocalFleet.start({
      workDir: join(work, 'fleet'),
      clusters: 1,
      namePrefix: 'sops-',
      databaseUrl: db.url,
      redisUrl: TEST_REDIS_URL,
      redisPrefix,
      pollSeconds: 1,
      agentEnv: { SOPS_AGE_KEY: identity },
    });
  }, 120_000);

  afterAll(async () => {
    await fleet?.stop();
    await db?.drop();
    await deleteRedisPrefix(redisPrefix);
    rmSync(work, { recursive: true, force: true });
  });

  it('is decrypted only in the cluster; the hub stores and logs ciphertext only', async () => {
    const cluster = fleet.clusters[0]!;
    await fleet.api.createAppSet({
      apiVersion: 'flotilla.dev/v1alpha1',
      kind: 'ApplicationSet',
      metadata: { name: 'payments' },
      spec: {
        generators: [{ list: { elements: [{ cluster: cluster.name }] } }],
        template: {
          metadata: { name: '{{cluster}}-payments' },
          spec: {
            source: { repoURL: `file://${repoDir}`, targetRevision: 'main', path: 'app' },
            destination: { name: '{{cluster}}', namespace: 'payments' },
          },
        },
      },
    });

    const kc = new KubeConfig();
    kc.loadFromFile(cluster.kubeconfigPath);
    const core = kc.makeApiClient(CoreV1Api);
    await expect
      .poll(
        async () => {
          const s = await core
            .readNamespacedSecret({ name: 'db', namespace: 'payments' })
            .catch(() => undefined);
          return s?.data?.['password'] ? Buffer.from(s.data['password'], 'base64').toString() : undefined;
        },
        { timeout: 60_000, interval: 500 },
      )
      .toBe(PLAINTEXT);
    await expect
      .poll(async () => (await fleet.api.targets())[0]?.syncStatus, { timeout: 30_000 })
      .toBe('Synced');

    // Every row of every table in the hub's database, as text.
    const client = new pg.Client({ connectionString: db.url });
    await client.connect();
    try {
      const tables = await client.query<{ tablename: string }>(
        `SELECT tablename FROM pg_tables WHERE schemaname = 'public'`,
      );
      expect(tables.rows.length).toBeGreaterThan(3);
      let bundles = 0;
      for (const { tablename } of tables.rows) {
        const rows = await client.query(`SELECT * FROM "${tablename}"`);
        const text = JSON.stringify(rows.rows);
        expect(text, `table ${tablename}`).not.toContain(PLAINTEXT);
        expect(text, `table ${tablename}`).not.toContain(Buffer.from(PLAINTEXT).toString('base64'));
        if (text.includes('ENC[AES256_GCM')) bundles++;
      }
      expect(bundles, 'the ciphertext is stored').toBeGreaterThan(0);
    } finally {
      await client.end();
    }
    const hubLog = readFileSync(join(work, 'fleet', 'logs', 'hub.log'), 'utf8');
    expect(hubLog.length).toBeGreaterThan(0);
    expect(hubLog).not.toContain(PLAINTEXT);
  }, 120_000);
});
