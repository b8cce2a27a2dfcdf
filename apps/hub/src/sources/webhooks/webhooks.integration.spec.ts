import 'reflect-metadata';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { JobQueues } from '../../queues/job-queues.service.js';
import { createTestGitRepo, startTestHub, type TestGitRepo, type TestHub } from '../../testing/index.js';
import { githubSignature } from './webhook-signature.js';

// The real hub on PostgreSQL, Redis and a real Git repository; polling is slowed to 5 minutes so
// only a webhook can make the mirror move during the test.

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

const SECRET = 'integration-webhook-secret-0123';
// The people's API is locked; webhooks must work without this token.
const ADMIN = 'integration-admin-token-0123';
const asAdmin = { authorization: `Bearer ${ADMIN}` };

interface Answer {
  status: number;
  body: Record<string, unknown>;
}

async function post(base: string, body: string | Buffer, headers: Record<string, string>): Promise<Answer> {
  const res = await fetch(`${base}/api/v1/webhooks/git`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body,
  });
  const text = await res.text();
  return { status: res.status, body: (text ? JSON.parse(text) : {}) as Record<string, unknown> };
}

function githubPush(url: string, after: string): string {
  return JSON.stringify({
    ref: 'refs/heads/main',
    after,
    repository: {
      clone_url: `${url}.git/`,
      html_url: 'https://git.example.com/none',
      ssh_url: 'git@git.example.com:none',
    },
  });
}

describe('Git webhooks on the real hub', () => {
  let hub: TestHub;
  let repo: TestGitRepo;
  let repoId: string;

  async function repository(): Promise<{ status: string; lastFetchedCommit: string | null }> {
    const res = await fetch(`${hub.url}/api/v1/repositories/${repoId}`, { headers: asAdmin });
    return (await res.json()) as { status: string; lastFetchedCommit: string | null };
  }

  beforeAll(async () => {
    repo = createTestGitRepo({ 'app/cm.yaml': 'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n' });
    hub = await startTestHub({
      SOURCE_POLL_INTERVAL_SECONDS: '300',
      FLOTILLA_WEBHOOK_SECRET: SECRET,
      FLOTILLA_ADMIN_TOKEN: ADMIN,
    });
    const res = await fetch(`${hub.url}/api/v1/repositories`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...asAdmin },
      body: JSON.stringify({ url: repo.url }),
    });
    repoId = ((await res.json()) as { id: string }).id;
    const first = repo.head();
    // The first fetch, queued by the registration.
    for (let i = 0; i < 200 && (await repository()).lastFetchedCommit !== first; i++) await sleep(100);
    expect((await repository()).lastFetchedCommit).toBe(first);
  }, 60_000);

  afterAll(async () => {
    await hub?.close();
    repo?.remove();
  });

  it('refuses a wrongly signed push with 401 and fetches nothing', async () => {
    const before = repo.head();
    const moved = repo.commit({ 'app/cm.yaml': 'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: b}\n' });
    const body = githubPush(repo.url, moved);
    const r = await post(hub.url, body, {
      'x-github-event': 'push',
      'x-hub-signature-256': githubSignature('not-the-hub-secret-at-all', body),
    });
    expect(r.status).toBe(401);
    expect(r.body['code']).toBe('webhook-signature-invalid');
    expect(r.body['path']).toBe('x-hub-signature-256');
    const missing = await post(hub.url, body, { 'x-github-event': 'push' });
    expect([missing.status, missing.body['code']]).toEqual([401, 'webhook-signature-missing']);
    const queue = hub.app.get(JobQueues).queue('source-sync');
    expect(await queue.getJob(`repo.${repoId}.push.${moved}`)).toBeUndefined();
    expect((await repository()).lastFetchedCommit).toBe(before);
  });

  it('turns a signed GitHub push into a fetch: 202 at once, then the repository moves', async () => {
    const next = repo.commit({ 'app/cm.yaml': 'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n' });
    const body = githubPush(repo.url, next);
    const headers = { 'x-github-event': 'push', 'x-hub-signature-256': githubSignature(SECRET, body) };
    const r = await post(hub.url, body, headers);
    expect(r.status).toBe(202);
    expect(r.body).toEqual({ matched: [repoId], queued: 1 });
    // A provider's redelivery of the same push collapses into the same job.
    const again = await post(hub.url, body, headers);
    expect(again.body).toEqual({ matched: [repoId], queued: 1 });
    const queue = hub.app.get(JobQueues).queue('source-sync');
    const job = await queue.getJob(`repo.${repoId}.push.${next}`);
    expect(job?.data).toEqual({ repositoryId: repoId, reason: 'webhook' });
    await expect.poll(async () => (await repository()).lastFetchedCommit, { timeout: 20_000 }).toBe(next);
  });

  it('answers GitLab and Gitea pushes for unknown repositories with 202 and nothing matched', async () => {
    const gitlab = JSON.stringify({
      ref: 'refs/heads/main',
      after: 'da1560886d4f094c3e6c9ef40349f7d38b5d27d7',
      project: {
        git_http_url: 'https://gitlab.example.com/x/y.git',
        web_url: 'https://gitlab.example.com/x/y',
      },
    });
    const gl = await post(hub.url, gitlab, { 'x-gitlab-event': 'Push Hook', 'x-gitlab-token': SECRET });
    expect([gl.status, gl.body]).toEqual([202, { matched: [], queued: 0 }]);
    const gitea = githubPush('https://gitea.example.com/x/y', 'bffeb74224043ba2feb48d137756c8a9331c449a');
    const hex = githubSignature(SECRET, gitea).slice('sha256='.length);
    const gt = await post(hub.url, gitea, { 'x-gitea-event': 'push', 'x-gitea-signature': hex });
    expect([gt.status, gt.body]).toEqual([202, { matched: [], queued: 0 }]);
  });

  it('answers ping with 200, a malformed push with 400 and its field path, a huge body with 413', async () => {
    const ping = JSON.stringify({ zen: 'Keep it logically awesome.' });
    const p = await post(hub.url, ping, {
      'x-github-event': 'ping',
      'x-hub-signature-256': githubSignature(SECRET, ping),
    });
    expect([p.status, p.body]).toEqual([200, { ok: true }]);

    const bad = JSON.stringify({ ref: 'refs/heads/main', after: 'abc', repository: { clone_url: 7 } });
    const b = await post(hub.url, bad, {
      'x-github-event': 'push',
      'x-hub-signature-256': githubSignature(SECRET, bad),
    });
    expect([b.status, b.body['code'], b.body['path']]).toEqual([
      400,
      'invalid-request',
      'repository.clone_url',
    ]);

    const notJson = 'payload=%7B%7D';
    const n = await post(hub.url, notJson, {
      'x-github-event': 'push',
      'x-hub-signature-256': githubSignature(SECRET, notJson),
    });
    expect([n.status, n.body['code']]).toEqual([400, 'invalid-request']);
    expect(n.body['message']).toContain('application/json');

    const huge = Buffer.alloc(1024 * 1024 + 1, 0x20);
    const h = await post(hub.url, huge, {
      'x-github-event': 'push',
      'x-hub-signature-256': githubSignature(SECRET, huge),
    });
    expect([h.status, h.body['code']]).toEqual([413, 'payload-too-large']);
  });

  it('counts deliveries by provider and outcome', async () => {
    const text = await (await fetch(`${hub.url}/metrics`)).text();
    expect(text).toContain('flotilla_webhook_deliveries_total{provider="github",outcome="queued"} 2');
    expect(text).toContain('flotilla_webhook_deliveries_total{provider="github",outcome="unauthorized"} 2');
    expect(text).toContain('flotilla_webhook_deliveries_total{provider="gitlab",outcome="unmatched"} 1');
    expect(text).toContain('flotilla_webhook_deliveries_total{provider="github",outcome="ping"} 1');
  });
});

describe('Git webhooks without FLOTILLA_WEBHOOK_SECRET', () => {
  let hub: TestHub;
  beforeAll(async () => {
    hub = await startTestHub({ HUB_ROLES: 'api', SOURCE_POLL_INTERVAL_SECONDS: '300' });
  }, 60_000);
  afterAll(async () => {
    await hub?.close();
  });

  it('answers 503 saying how to enable them', async () => {
    const r = await post(hub.url, '{}', { 'x-github-event': 'push', 'x-hub-signature-256': 'sha256=00' });
    expect(r.status).toBe(503);
    expect(r.body['code']).toBe('webhooks-disabled');
    expect(r.body['message']).toContain('FLOTILLA_WEBHOOK_SECRET');
  });
});
