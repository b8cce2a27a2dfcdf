import 'reflect-metadata';
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Database } from '../../db/database.js';
import { CredentialCipher } from '../git/credential-cipher.js';
import { JobQueues } from '../../queues/job-queues.service.js';
import { createTestGitRepo, startTestHub, type TestGitRepo, type TestHub } from '../../testing/index.js';
import { startTestHttpGitServer, type TestHttpGitServer } from '../../testing/test-http-git-server.js';
import { sshdAvailable, startTestSshGitServer } from '../../testing/test-ssh-git-server.js';
import { pollOffsetMs } from '../../queues/poll-jitter.js';
import { RepositoriesService } from './repositories.service.js';

// Repository credentials and fetch status on the real hub (PostgreSQL, Redis, BullMQ) against a real
// smart-HTTP Git server that wants a username and token.

const KEY = randomBytes(32).toString('hex');
const OLD_KEY = randomBytes(32).toString('hex');
const TOKEN = `glpat-${randomBytes(12).toString('hex')}`;

let hub: TestHub;
let repo: TestGitRepo;
let server: TestHttpGitServer;
let firstSha: string;

interface RepositoryView {
  id: string;
  url: string;
  status: string;
  error: string | null;
  hasCredentials: boolean;
  credentials: { type: string; username: string | null } | null;
  refs: Record<string, string>;
  lastFetchedCommit: string | null;
  lastAttemptAt: string | null;
}

async function call<T>(
  method: string,
  path: string,
  body?: unknown,
): Promise<{ status: number; text: string; body: T }> {
  const res = await fetch(`${hub.url}${path}`, {
    method,
    headers: body === undefined ? {} : { 'content-type': 'application/json' },
    ...(body !== undefined && { body: JSON.stringify(body) }),
  });
  const text = await res.text();
  return { status: res.status, text, body: (text ? JSON.parse(text) : null) as T };
}

const view = async (id: string) => (await call<RepositoryView>('GET', `/api/v1/repositories/${id}`)).body;

beforeAll(async () => {
  repo = createTestGitRepo({ 'app/cm.yaml': 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n' });
  firstSha = repo.head();
  server = await startTestHttpGitServer(repo.dir, 'deploy-bot', TOKEN);
  hub = await startTestHub({ FLOTILLA_SECRETS_KEY: KEY, FLOTILLA_SECRETS_KEY_PREVIOUS: OLD_KEY });
}, 60_000);

afterAll(async () => {
  await hub?.close();
  await server?.close();
  repo?.remove();
});

describe('HTTPS token credentials', () => {
  let id: string;

  it('a repository that needs credentials fails to fetch without them, and says why', async () => {
    const created = await call<RepositoryView>('POST', '/api/v1/repositories', { url: server.url });
    expect(created.status).toBe(201);
    id = created.body.id;
    expect(created.body).toMatchObject({ hasCredentials: false, credentials: null });
    await expect.poll(async () => (await view(id)).status, { timeout: 20_000 }).toBe('Error');
    expect((await view(id)).error).toMatch(
      /cannot fetch .*(Authentication failed|could not read Username|401)/,
    );
    expect(server.refused).toBeGreaterThan(0);
  });

  it('refuses malformed credentials with the field named, changing nothing', async () => {
    const bad = await call<{ code: string; path: string }>('PUT', `/api/v1/repositories/${id}/credentials`, {
      type: 'https-token',
      username: 'deploy-bot',
    });
    expect(bad.status).toBe(400);
    expect(bad.body.path).toBe('token');
    const key = await call<{ code: string; message: string }>(
      'PUT',
      `/api/v1/repositories/${id}/credentials`,
      {
        type: 'ssh-key',
        privateKey: 'not a key',
      },
    );
    expect(key.status).toBe(400);
    expect(key.body.message).toContain('privateKey');
    expect((await view(id)).hasCredentials).toBe(false);
  });

  it('with a stored token the fetch succeeds; the API shows only type and username', async () => {
    const put = await call<RepositoryView>('PUT', `/api/v1/repositories/${id}/credentials`, {
      type: 'https-token',
      username: 'deploy-bot',
      token: TOKEN,
    });
    expect(put.status).toBe(200);
    expect(put.body).toMatchObject({
      hasCredentials: true,
      credentials: { type: 'https-token', username: 'deploy-bot' },
    });
    expect(put.text).not.toContain(TOKEN);
    await expect.poll(async () => (await view(id)).status, { timeout: 20_000 }).toBe('Ready');
    expect((await view(id)).lastFetchedCommit).toBe(firstSha);
    for (const path of ['/api/v1/repositories', `/api/v1/repositories/${id}`, '/api/v1/audit?limit=200']) {
      expect((await call('GET', path)).text).not.toContain(TOKEN);
    }
  });

  it('stores the token only as AES-256-GCM ciphertext bound to its row', async () => {
    const row = await hub.app.get(Database).prisma.repository.findUniqueOrThrow({ where: { id } });
    expect(row.credentialCiphertext).toMatch(/^v1:[0-9a-f]{8}:/);
    expect(row.credentialCiphertext).not.toContain(TOKEN);
    const cipher = new CredentialCipher(KEY);
    expect(cipher.open(row.credentialCiphertext ?? '', `repository:${id}`)).toBe(TOKEN);
    // Copied onto another repository's row it does not open.
    expect(() => cipher.open(row.credentialCiphertext ?? '', 'repository:someone-else')).toThrow(
      /does not authenticate/,
    );
    const rows = await hub.app.get(Database).prisma.$queryRaw<{ n: bigint }[]>`
      SELECT count(*) AS n FROM "Repository" WHERE "credentialCiphertext" LIKE ${`%${TOKEN}%`}`;
    expect(Number(rows[0]?.n)).toBe(0);
  });

  it('a failed fetch keeps the last good commit and says why on the status', async () => {
    // The token is revoked on the Git host, then a commit lands: the hub keeps serving what it had.
    await call('PUT', `/api/v1/repositories/${id}/credentials`, {
      type: 'https-token',
      username: 'deploy-bot',
      token: 'revoked-token',
    });
    await expect.poll(async () => (await view(id)).status, { timeout: 20_000 }).toBe('Error');
    const second = repo.commit({ 'app/cm.yaml': 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: b\n' });
    const before = (await view(id)).lastAttemptAt ?? '';
    await call('POST', `/api/v1/repositories/${id}/refresh`);
    await expect.poll(async () => (await view(id)).lastAttemptAt ?? '', { timeout: 20_000 }).not.toBe(before);
    const v = await view(id);
    expect(v.status).toBe('Error');
    expect(v.error).toMatch(/cannot fetch .*(Authentication failed|401)/);
    expect(v.error).not.toContain('revoked-token');
    expect(v.lastFetchedCommit).toBe(firstSha);
    expect(v.refs['HEAD']).toBe(firstSha);
    expect(second).not.toBe(firstSha);
  });

  it('removing credentials leaves no ciphertext', async () => {
    const del = await call<RepositoryView>('DELETE', `/api/v1/repositories/${id}/credentials`);
    expect(del.body).toMatchObject({ hasCredentials: false, credentials: null });
    const row = await hub.app.get(Database).prisma.repository.findUniqueOrThrow({ where: { id } });
    expect(row.credentialCiphertext).toBeNull();
  });
});

// OpenSSH's sshd is needed (apt-get install openssh-server); without it these are skipped.
describe.skipIf(!sshdAvailable)('SSH key credentials', () => {
  it('fetches over SSH with the stored deploy key, and not without it', async () => {
    const ssh = await startTestSshGitServer(repo.dir);
    try {
      const anonymous = await call<RepositoryView>('POST', '/api/v1/repositories', { url: ssh.url });
      await expect
        .poll(async () => (await view(anonymous.body.id)).status, { timeout: 40_000 })
        .toBe('Error');
      expect((await view(anonymous.body.id)).error).toMatch(
        /cannot fetch ssh:.*(correct access rights|Permission denied|Host key verification)/,
      );

      const put = await call<RepositoryView>('PUT', `/api/v1/repositories/${anonymous.body.id}/credentials`, {
        type: 'ssh-key',
        privateKey: ssh.privateKey,
      });
      expect(put.body).toMatchObject({
        hasCredentials: true,
        credentials: { type: 'ssh-key', username: null },
      });
      expect(JSON.stringify(put.body)).not.toContain('PRIVATE KEY');
      await expect
        .poll(async () => (await view(anonymous.body.id)).status, { timeout: 40_000 })
        .toBe('Ready');
      expect((await view(anonymous.body.id)).lastFetchedCommit).toBe(repo.head());
    } finally {
      await ssh.close();
    }
  }, 120_000);
});

describe('key rotation', () => {
  it('reseals credentials sealed with a previous key with the current one at start', async () => {
    const db = hub.app.get(Database);
    const other = await db.prisma.repository.create({ data: { url: 'https://git.example/rotated.git' } });
    const sealedOld = new CredentialCipher(OLD_KEY).seal('old-secret', `repository:${other.id}`);
    await db.prisma.repository.update({
      where: { id: other.id },
      data: { credentialType: 'https-token', credentialUsername: 'x', credentialCiphertext: sealedOld },
    });
    await hub.app.get(RepositoriesService).onModuleInit();
    const row = await db.prisma.repository.findUniqueOrThrow({ where: { id: other.id } });
    expect(row.credentialCiphertext).not.toBe(sealedOld);
    const current = new CredentialCipher(KEY);
    expect(current.isStale(row.credentialCiphertext ?? '')).toBe(false);
    expect(current.open(row.credentialCiphertext ?? '', `repository:${other.id}`)).toBe('old-secret');
  });
});

describe('polling', () => {
  it('is a BullMQ job scheduler per repository at its own jittered point of the interval', async () => {
    const { body } = await call<RepositoryView[]>('GET', '/api/v1/repositories');
    const id = body.find((r) => r.url === server.url)?.id ?? '';
    const scheduler = await hub.app.get(JobQueues).queue('source-sync').getJobScheduler(`poll.${id}`);
    expect(scheduler?.every).toBe(1000);
    expect(Number(scheduler?.offset)).toBe(pollOffsetMs(id, 1000));
  });
});
