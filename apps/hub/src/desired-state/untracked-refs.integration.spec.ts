import 'reflect-metadata';
import { execFileSync } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { Database } from '../db/database.js';
import { GitMirrorsService } from '../sources/git/git-mirrors.service.js';
import { RepositoriesService } from '../sources/repositories/repositories.service.js';
import {
  createTestGitRepo,
  hubCaller,
  startTestHub,
  waitForIdleQueues,
  type TestGitRepo,
  type TestHub,
} from '../testing/index.js';

// A ref an appset stops reading is no longer kept fresh by the polls; when an appset asks for it
// again, the expansion must see the ref's newest commit, not the one recorded while it was tracked.
// Real hub, PostgreSQL, Redis and Git; polls too slow to run on their own, so each one is explicit.

let hub: TestHub;
let repo: TestGitRepo;
const call = hubCaller(() => hub);

const git = (...args: string[]) => execFileSync('git', ['-C', repo.dir, ...args], { stdio: 'ignore' });

/** Commits on `branch` (made from main if new) and goes back to main; the new commit's sha. */
function commitOn(branch: string, content: string): string {
  try {
    git('show-ref', '--verify', '--quiet', `refs/heads/${branch}`);
    git('checkout', '-q', branch);
  } catch {
    git('checkout', '-q', '-b', branch);
  }
  const sha = repo.commit({ 'app/config.yaml': content }, `on ${branch}`);
  git('checkout', '-q', 'main');
  return sha;
}

const appset = (name: string, targetRevision: string, element: Record<string, string> = {}) => ({
  apiVersion: 'flotilla.dev/v1alpha1',
  kind: 'ApplicationSet',
  metadata: { name },
  spec: {
    generators: [{ list: { elements: [{ cluster: 'c1', ...element }] } }],
    template: {
      metadata: { name: `${name}-{{cluster}}` },
      spec: {
        source: { repoURL: repo.url, targetRevision, path: 'app' },
        destination: { name: '{{cluster}}', namespace: name },
      },
    },
  },
});

const configMap = (value: string) =>
  `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: config\ndata:\n  value: "${value}"\n`;

/** Applies the appset and waits until its expansion (and all it queued) ran. */
async function apply(name: string, targetRevision: string, element?: Record<string, string>): Promise<void> {
  const r = await call('POST', '/api/v1/appsets', appset(name, targetRevision, element));
  expect([200, 201]).toContain(r.status);
  await waitForIdleQueues(hub.app);
}

const desiredRevision = async (target: string) =>
  (await hub.app.get(Database).prisma.target.findUnique({ where: { name: target } }))?.desiredRevision;

const repositoryId = async () =>
  (await hub.app.get(Database).prisma.repository.findUniqueOrThrow({ where: { url: repo.url } })).id;

/** What a poll of the repository does: fetch and record every tracked ref. */
async function poll(): Promise<void> {
  expect((await hub.app.get(RepositoriesService).syncNow(await repositoryId())).ok).toBe(true);
  await waitForIdleQueues(hub.app);
}

const storedRefs = async () =>
  (await call<{ refs: Record<string, string> }>('GET', `/api/v1/repositories/${await repositoryId()}`)).body
    .refs;

describe('refs an appset reads again after they were no longer tracked', () => {
  beforeAll(async () => {
    repo = createTestGitRepo({ 'app/config.yaml': configMap('main-1') });
    hub = await startTestHub({ SOURCE_POLL_INTERVAL_SECONDS: '3600' });
    expect((await call('POST', '/api/v1/clusters', { name: 'c1' })).status).toBe(201);
  }, 180_000);

  afterAll(async () => {
    await hub?.close();
    repo?.remove();
  }, 120_000);

  it('a branch the appset comes back to resolves to its newest commit at once', async () => {
    const a = commitOn('release', configMap('release-a'));
    await apply('web', 'release');
    expect(await desiredRevision('web-c1')).toBe(a);

    await apply('web', 'main');
    expect(await desiredRevision('web-c1')).toBe(repo.head());
    // The poll after the move no longer tracks `release`: nobody keeps it fresh.
    await poll();

    // B lands on `release` after the last poll: neither the rows nor the mirror know it yet.
    const b = commitOn('release', configMap('release-b'));
    await apply('web', 'release');
    expect(await desiredRevision('web-c1')).toBe(b);
    // Recorded by that expansion, so the polls keep it fresh from now on.
    expect(await storedRefs()).toMatchObject({ release: b });
  }, 120_000);

  it('a tag force-moved while nobody read it resolves to where it points now', async () => {
    repo.tag('v1');
    const first = repo.head();
    await apply('tagged', 'v1');
    expect(await desiredRevision('tagged-c1')).toBe(first);

    await apply('tagged', 'main');
    await poll();

    const moved = repo.commit({ 'app/config.yaml': configMap('main-2') });
    repo.tag('v1');
    await apply('tagged', 'v1');
    expect(await desiredRevision('tagged-c1')).toBe(moved);
  }, 120_000);

  it('a templated targetRevision naming a branch no poll tracks is fetched before it is resolved', async () => {
    // Known only once the generator ran: resolved per target, after the repository was prepared.
    const feature = commitOn('feature', configMap('feature'));
    await apply('tpl', '{{branch}}', { branch: 'feature' });
    expect(await desiredRevision('tpl-c1')).toBe(feature);
    expect(await storedRefs()).toMatchObject({ feature });
  }, 120_000);

  it('a tracked ref costs no fetch when an appset expands again', async () => {
    const mirrors = hub.app.get(GitMirrorsService).mirrors;
    const fetch = vi.spyOn(mirrors, 'fetch');
    try {
      // `release` is tracked (the appset `web` reads it): a refresh expands from the recorded commit.
      expect((await call('POST', '/api/v1/appsets/web/refresh', {})).status).toBe(202);
      await waitForIdleQueues(hub.app);
      expect(fetch).not.toHaveBeenCalled();
      // A second appset on the same tracked branch: no fetch either.
      await apply('web2', 'release');
      expect(fetch).not.toHaveBeenCalled();
      expect(await desiredRevision('web2-c1')).toBe(await desiredRevision('web-c1'));
    } finally {
      fetch.mockRestore();
    }
  }, 120_000);

  it('a branch that does not exist fails the expansion, fetched once until the next poll', async () => {
    const mirrors = hub.app.get(GitMirrorsService).mirrors;
    const fetch = vi.spyOn(mirrors, 'fetch');
    try {
      await apply('typo', 'relaese');
      const view = await call<{ status: string; error: { code: string } | null }>(
        'GET',
        '/api/v1/appsets/typo',
      );
      expect(view.body.error?.code).toBe('unknown-revision');
      expect(fetch).toHaveBeenCalledTimes(1);
      expect((await call('POST', '/api/v1/appsets/typo/refresh', {})).status).toBe(202);
      await waitForIdleQueues(hub.app);
      expect(fetch).toHaveBeenCalledTimes(1);
      expect(await desiredRevision('typo-c1')).toBeUndefined();
    } finally {
      fetch.mockRestore();
    }
  }, 120_000);

  it('a poll drops the row of a ref nothing reads any more, and keeps the others', async () => {
    const hotfix = commitOn('hotfix', configMap('hotfix'));
    await apply('hf', 'hotfix');
    expect(await storedRefs()).toMatchObject({ hotfix });
    await apply('hf', 'main');
    await poll();
    const refs = await storedRefs();
    // What the appsets and targets read: `release` (web, web2), `v1` (tagged), `feature` (tpl's
    // target), `main` (hf) and HEAD; `relaese` (typo) names nothing on the remote: it never had a row.
    expect(Object.keys(refs).sort()).toEqual(['HEAD', 'feature', 'main', 'release', 'v1']);
    expect(refs).toMatchObject({ HEAD: repo.head(), main: repo.head() });
  }, 120_000);
});
