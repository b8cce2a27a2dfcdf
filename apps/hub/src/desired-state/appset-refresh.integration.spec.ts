import 'reflect-metadata';
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Database } from '../db/database.js';
import {
  createTestGitRepo,
  startTestHub,
  waitForIdleQueues,
  type TestGitRepo,
  type TestHub,
  hubCaller,
} from '../testing/index.js';

// Refresh and hard refresh on the real hub (PostgreSQL, Redis, Git), with polling too slow to
// notice a commit on its own: only a hard refresh fetches it.

const fixture = (name: string) => readFileSync(new URL(`./testdata/${name}`, import.meta.url), 'utf8');

let hub: TestHub;
let repo: TestGitRepo;

const call = hubCaller(() => hub);

const desiredRevision = async () =>
  (await hub.app.get(Database).prisma.target.findUnique({ where: { name: 'web-c1' } }))?.desiredRevision;

describe('appset refresh', () => {
  beforeAll(async () => {
    repo = createTestGitRepo({ 'app/config.yaml': fixture('configmap.yaml') });
    hub = await startTestHub({ SOURCE_POLL_INTERVAL_SECONDS: '3600' });
    expect((await call('POST', '/api/v1/clusters', { name: 'c1' })).status).toBe(201);
    const doc = {
      apiVersion: 'flotilla.dev/v1alpha1',
      kind: 'ApplicationSet',
      metadata: { name: 'web' },
      spec: {
        generators: [{ list: { elements: [{ cluster: 'c1' }] } }],
        template: {
          metadata: { name: 'web-{{cluster}}' },
          spec: {
            source: { repoURL: repo.url, targetRevision: 'main', path: 'app' },
            destination: { name: '{{cluster}}', namespace: 'web' },
          },
        },
      },
    };
    expect((await call('POST', '/api/v1/appsets', doc)).status).toBe(201);
  }, 180_000);

  afterAll(async () => {
    await hub?.close();
    repo?.remove();
  }, 120_000);

  it('a refresh evaluates again without fetching; a hard refresh fetches, and the commit arrives', async () => {
    const first = repo.head();
    await expect.poll(desiredRevision, { timeout: 60_000 }).toBe(first);
    const next = repo.commit({ 'app/config.yaml': fixture('configmap.yaml').replace('eu1', 'eu2') });

    const soft = await call<{ hard: boolean; repositories: unknown[] }>(
      'POST',
      '/api/v1/appsets/web/refresh',
      {
        reason: 'inventory changed',
      },
    );
    expect(soft.status).toBe(202);
    expect(soft.body).toMatchObject({ hard: false, repositories: [] });
    await waitForIdleQueues(hub.app);
    expect(await desiredRevision()).toBe(first);

    const hard = await call<{ hard: boolean; repositories: { url: string }[] }>(
      'POST',
      '/api/v1/appsets/web/refresh',
      { hard: true },
    );
    expect(hard.status).toBe(202);
    expect(hard.body).toMatchObject({ hard: true, repositories: [{ url: repo.url }] });
    await expect.poll(desiredRevision, { timeout: 60_000 }).toBe(next);

    const audit = await call<{ items: { actor: string; details: Record<string, unknown> }[] }>(
      'GET',
      '/api/v1/audit?scope=appset:web&action=appset.refreshed',
    );
    expect(audit.body.items).toHaveLength(2);
    expect(audit.body.items[0]?.details).toMatchObject({ hard: true, repositories: [repo.url] });
    expect(audit.body.items[1]?.details).toMatchObject({
      hard: false,
      repositories: [],
      reason: 'inventory changed',
    });
  }, 120_000);

  it('refuses an unknown appset and a bad body, asking nothing', async () => {
    const before = await call<{ items: unknown[] }>('GET', '/api/v1/audit?action=appset.refreshed');
    expect((await call('POST', '/api/v1/appsets/nope/refresh', { hard: true })).status).toBe(404);
    const bad = await call<{ code: string; path: string }>('POST', '/api/v1/appsets/web/refresh', {
      hard: 'yes',
    });
    expect([bad.status, bad.body.code, bad.body.path]).toEqual([400, 'invalid-request', 'hard']);
    const after = await call<{ items: unknown[] }>('GET', '/api/v1/audit?action=appset.refreshed');
    expect(after.body.items).toHaveLength(before.body.items.length);
  });
});
