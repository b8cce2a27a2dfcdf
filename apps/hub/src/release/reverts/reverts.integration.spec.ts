import { execFileSync } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AGENT_FEATURES, AGENT_FEATURES_HEADER, type AssignmentsResponse } from '@flotilla/contract';
import { Database } from '../../db/database.js';
import { createTestGitRepo, type TestGitRepo } from '../../testing/test-git-repo.js';
import { startTestGitDaemon, type TestGitDaemon } from '../../testing/test-git-daemon.js';
import { startTestGitHostApi, type TestGitHostApi } from '../../testing/test-git-host-api.js';
import { hubCaller, startTestHub, type TestHub } from '../../testing/test-hub.js';

const ADMIN = 'reverts-admin-token';
const SECRET = 'ghp_push-token-never-shown';
const configMap = (owner: string) =>
  `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web-config\ndata:\n  owner: ${owner}\n`;

/** Asks `read` until `done` holds of its answer (beforeAll has no expect.poll); fails after 60 s. */
async function until<T>(what: string, read: () => Promise<T>, done: (v: T) => boolean): Promise<T> {
  const deadline = Date.now() + 60_000;
  for (;;) {
    const value = await read();
    if (done(value)) return value;
    if (Date.now() > deadline) throw new Error(`${what}: still ${JSON.stringify(value)} after 60 s`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

interface AuditPage {
  items: { actor: string; action: string; scope: string; details: Record<string, unknown> }[];
}
interface ErrorBody {
  code: string;
  message: string;
  path?: string;
}
interface RevertView {
  to: string;
  head: string;
  commits: { commit: string; subject: string }[];
  revert: string;
  branch: string;
  pullRequest: { url: string; number: number };
  restores: boolean | null;
  pins: { target: string; revision: string }[];
  alreadyOpen: boolean;
}

/**
 * Rollback by revert at the hub, on real PostgreSQL, Redis and git: the application repository is
 * served by `git daemon` with push enabled, the Git hosts' APIs by a local recorder. The agent of
 * eu-1 is spoken by hand.
 */
describe('rollback by revert: the hub opens the pull request (PostgreSQL, Redis, git daemon)', () => {
  let repo: TestGitRepo;
  let daemon: TestGitDaemon;
  let hostApi: TestGitHostApi;
  let hub: TestHub;
  let credential = '';
  let repositoryId = '';
  let good = '';
  let bad = '';
  let goodDigest = '';
  const send = hubCaller(() => hub);
  const call = <T = Record<string, unknown>>(method: string, path: string, body?: unknown) =>
    send<T>(method, path, body, { authorization: `Bearer ${ADMIN}` });
  const agent = <T = Record<string, unknown>>(method: string, path: string, body?: unknown) =>
    send<T>(method, path, body, {
      authorization: `Bearer ${credential}`,
      [AGENT_FEATURES_HEADER]: AGENT_FEATURES.join(','),
    });
  const assignment = async () =>
    (await agent<AssignmentsResponse>('GET', '/api/agent/v1/assignments')).body.assignments[0];
  const audit = async (action: string) =>
    (await call<AuditPage>('GET', `/api/v1/audit?action=${action}`)).body.items;
  const git = (...args: string[]) =>
    execFileSync('git', ['-C', repo.dir, ...args], {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'pipe'],
    }).trim();
  const revertBranches = () => git('branch', '--list', 'flotilla/*', '--format=%(refname:short)');
  const desired = async () =>
    (await call<{ desiredRevision: string; bundleDigest: string }[]>('GET', '/api/v1/targets?appSet=web'))
      .body[0];
  /** Commits, then has the hub fetch and expand until the target wants the new head. */
  const commit = async (files: Record<string, string>, message: string) => {
    const sha = repo.commit(files, message);
    await call('POST', `/api/v1/repositories/${repositoryId}/refresh`);
    await until(
      'the target to want the new commit',
      async () => (await desired())?.desiredRevision,
      (r) => r === sha,
    );
    return sha;
  };
  const report = async (r: Record<string, unknown>) => {
    const at = new Date().toISOString();
    const sent = {
      type: 'sync',
      id: randomUUID(),
      at,
      startedAt: at,
      finishedAt: at,
      outcome: 'Succeeded',
      ...r,
    };
    expect((await agent('POST', '/api/agent/v1/reports', { reports: [sent] })).status).toBe(200);
  };
  const setWriteAccess = (host: Record<string, unknown>) =>
    call('PUT', `/api/v1/repositories/${repositoryId}/write-access`, {
      credentials: { type: 'https-token', username: 'flotilla-bot', token: SECRET },
      host: { apiUrl: hostApi.url, repository: 'acme/web', ...host },
    });

  beforeAll(async () => {
    repo = createTestGitRepo({ 'app/config.yaml': configMap('platform'), 'README.md': 'web\n' });
    daemon = await startTestGitDaemon(repo.dir);
    hostApi = await startTestGitHostApi();
    hub = await startTestHub({
      FLOTILLA_ADMIN_TOKEN: ADMIN,
      FLOTILLA_SECRETS_KEY: randomBytes(32).toString('hex'),
      REVERT_AUTHOR_NAME: 'Flotilla Reverts',
      REVERT_AUTHOR_EMAIL: 'reverts@flotilla.test',
    });
    const created = await call<{ bootstrapToken: string }>('POST', '/api/v1/clusters', { name: 'eu-1' });
    const registered = await call<{ credential: string }>('POST', '/api/agent/v1/register', {
      clusterName: 'eu-1',
      bootstrapToken: created.body.bootstrapToken,
    });
    credential = registered.body.credential;
    const applied = await call('POST', '/api/v1/appsets', {
      apiVersion: 'flotilla.dev/v1alpha1',
      kind: 'ApplicationSet',
      metadata: { name: 'web' },
      spec: {
        generators: [{ list: { elements: [{ cluster: 'eu-1' }] } }],
        template: {
          metadata: { name: 'web-{{cluster}}' },
          spec: {
            source: { repoURL: daemon.url, targetRevision: 'main', path: 'app' },
            destination: { name: '{{cluster}}', namespace: 'web' },
          },
        },
      },
    });
    expect(applied.status).toBe(201);
    await until('the first render', async () => (await assignment())?.bundleDigest, Boolean);
    good = repo.head();
    goodDigest = (await assignment())?.bundleDigest ?? '';
    repositoryId = (await call<{ id: string; url: string }[]>('GET', '/api/v1/repositories')).body.find(
      (r) => r.url === daemon.url,
    )!.id;
    // eu-1 ran the good revision, then Git moved on: an unrelated commit, the bad one, another unrelated one.
    await report({
      targetId: (await assignment())?.targetId,
      revision: good,
      bundleDigest: goodDigest,
      trigger: 'auto',
    });
    await commit({ 'README.md': 'web, the shop front\n' }, 'docs: say what web is');
    bad = await commit({ 'app/config.yaml': configMap('nobody') }, 'web: hand it to nobody');
    await commit({ 'README.md': 'web, the shop front (owned by platform)\n' }, 'docs: name the owner');
  }, 120_000);
  afterAll(async () => {
    await hub?.close();
    await hostApi?.close();
    await daemon?.close();
    repo?.remove();
  });

  it('without write access refuses with 409 naming the repository, writing nothing', async () => {
    const refused = await call<ErrorBody>('POST', '/api/v1/targets/web-eu-1/revert', { to: good });
    expect([refused.status, refused.body.code]).toEqual([409, 'no-write-access']);
    expect(refused.body.message).toContain(daemon.url);
    expect(revertBranches()).toBe('');
  });

  it('stores write access sealed: bad input names the field, the API never shows the secret', async () => {
    const noApiToken = await call<ErrorBody>('PUT', `/api/v1/repositories/${repositoryId}/write-access`, {
      credentials: {
        type: 'ssh-key',
        privateKey: '-----BEGIN OPENSSH PRIVATE KEY-----\nx\n-----END OPENSSH PRIVATE KEY-----',
      },
      host: { kind: 'github', repository: 'acme/web' },
    });
    expect([noApiToken.status, noApiToken.body.path]).toEqual([400, 'host.token']);
    const badKind = await setWriteAccess({ kind: 'bitbucket' });
    expect([badKind.status, (badKind.body as unknown as ErrorBody).path]).toEqual([400, 'host.kind']);
    expect((await call('GET', `/api/v1/repositories/${repositoryId}/write-access`)).status).toBe(404);

    const set = await setWriteAccess({ kind: 'gitlab', apiUrl: `${hostApi.url}/api/v4` });
    expect(set.status).toBe(200);
    expect(set.body).toEqual({
      repository: daemon.url,
      credentials: { type: 'https-token', username: 'flotilla-bot' },
      host: { kind: 'gitlab', apiUrl: `${hostApi.url}/api/v4`, repository: 'acme/web', hasApiToken: false },
      baseBranch: null,
    });
    const everything = JSON.stringify([
      (await call('GET', `/api/v1/repositories/${repositoryId}/write-access`)).body,
      (await call('GET', '/api/v1/repositories')).body,
      await audit('repository.write-access-set'),
    ]);
    expect(everything).not.toContain(SECRET);
    const row = await hub.app
      .get(Database)
      .prisma.repository.findUniqueOrThrow({ where: { id: repositoryId } });
    expect(row.writeCredentialCiphertext).toMatch(/^v1:[0-9a-f]{8}:/);
    expect(row.writeCredentialCiphertext).not.toContain(SECRET);
  });

  it('a host that refuses the pull request (401) gets a clear error; the pushed branch is deleted', async () => {
    hostApi.refuseNextPullRequest(401);
    const refused = await call<ErrorBody>('POST', '/api/v1/targets/web-eu-1/revert', { to: good });
    expect([refused.status, refused.body.code]).toEqual([502, 'pull-request-refused']);
    expect(refused.body.message).toMatch(/refused the API token.*401/);
    // It reached GitLab's merge-request endpoint with the token, then cleaned up after itself.
    expect(hostApi.pullRequests().at(-1)).toMatchObject({
      path: '/api/v4/projects/acme%2Fweb/merge_requests',
      privateToken: SECRET,
      url: null,
    });
    expect(revertBranches()).toBe('');
    // A host that says no to the pull request itself (422): the same, and nothing recorded as opened.
    hostApi.refuseNextPullRequest(422);
    const unprocessable = await call<ErrorBody>('POST', '/api/v1/targets/web-eu-1/revert', { to: good });
    expect([unprocessable.status, unprocessable.body.code]).toEqual([502, 'pull-request-refused']);
    expect(unprocessable.body.message).toMatch(/refused the pull request.*422/);
    expect(revertBranches()).toBe('');
    expect(await audit('revert.opened')).toEqual([]);
    expect((await audit('revert.failed')).map((e) => [e.scope, e.actor])).toEqual([
      ['target:web-eu-1', 'user:admin'],
      ['target:web-eu-1', 'user:admin'],
    ]);
  });

  it(
    'after an automatic rollback, opens the revert of the bad commit only, naming the pin it replaces',
    { timeout: 60_000 },
    async () => {
      expect((await setWriteAccess({ kind: 'github' })).status).toBe(200);
      const served = await assignment();
      expect(served?.revision).toBe((await desired())?.desiredRevision);
      // eu-1's agent rolls back on its own to the good revision: the hub pins it there.
      await report({
        targetId: served?.targetId,
        revision: good,
        bundleDigest: goodDigest,
        trigger: 'rollback',
        rolledBackFrom: {
          revision: served?.revision,
          bundleDigest: served?.bundleDigest,
          reason: 'Degraded',
        },
      });
      await expect.poll(async () => (await audit('revert.opened')).length, { timeout: 30_000 }).toBe(1);
      const [opened] = await audit('revert.opened');
      const branch = `flotilla/revert-web-${served?.revision?.slice(0, 12) ?? ''}`;
      expect(opened).toMatchObject({
        actor: 'system:automatic-rollback',
        scope: 'target:web-eu-1',
        details: {
          repository: daemon.url,
          pullRequest: `${hostApi.url}/acme/web/pull/1`,
          branch,
          base: 'main',
          to: good,
          head: served?.revision,
          commits: [{ commit: bad, subject: 'web: hand it to nobody' }],
          restores: true,
          pins: [{ target: 'web-eu-1', revision: good, bundleDigest: goodDigest }],
        },
      });
      expect(hostApi.pullRequests().at(-1)).toMatchObject({
        path: '/repos/acme/web/pulls',
        authorization: `Bearer ${SECRET}`,
        body: { head: branch, base: 'main' },
      });
      // The branch holds one commit on Git's head, by the configured identity, reverting the bad one.
      expect(revertBranches()).toBe(branch);
      expect(git('log', '-1', '--format=%an <%ae>|%P', branch)).toBe(
        `Flotilla Reverts <reverts@flotilla.test>|${served?.revision ?? ''}`,
      );
      expect(git('show', `${branch}:app/config.yaml`)).toBe(configMap('platform').trim());
      expect(git('show', `${branch}:README.md`)).toContain('owned by platform');

      // Asked again (a person after the rollback): the same revert, nothing new written.
      const again = await call<RevertView>('POST', '/api/v1/targets/web-eu-1/revert', {});
      expect([again.status, again.body.alreadyOpen, again.body.pullRequest.url]).toEqual([
        201,
        true,
        `${hostApi.url}/acme/web/pull/1`,
      ]);
      expect(hostApi.pullRequests().filter((p) => p.url !== null)).toHaveLength(1);
    },
  );

  it('merging the revert lifts the pin: Git renders the pinned bundle again', async () => {
    const [opened] = await audit('revert.opened');
    const branch = String(opened?.details.branch);
    git(
      '-c',
      'user.name=Reviewer',
      '-c',
      'user.email=reviewer@flotilla.test',
      'merge',
      '-q',
      '--no-edit',
      branch,
    );
    const merged = repo.head();
    await call('POST', `/api/v1/repositories/${repositoryId}/refresh`);
    await expect
      .poll(async () => (await call<unknown[]>('GET', '/api/v1/pins')).body, { timeout: 30_000 })
      .toEqual([]);
    expect(await desired()).toMatchObject({ desiredRevision: merged, bundleDigest: goodDigest });
    expect(await audit('pin.lifted')).toEqual([
      expect.objectContaining({
        actor: 'system:pin-lifting',
        scope: 'target:web-eu-1',
        details: expect.objectContaining({
          revision: good,
          gitRevision: merged,
          revert: `${hostApi.url}/acme/web/pull/1`,
          reason: expect.stringContaining('renders the pinned bundle') as string,
        }) as object,
      }),
    ]);
    // The agent is served Git's revision now, with the bundle it already runs.
    await expect.poll(async () => (await assignment())?.revision, { timeout: 10_000 }).toBe(merged);
    expect((await assignment())?.bundleDigest).toBe(goodDigest);
  });

  it('on demand for an appset (Gitea); nothing to revert and bad input are refused, changing nothing', async () => {
    const start = repo.head();
    expect((await setWriteAccess({ kind: 'gitea', apiUrl: `${hostApi.url}/api/v1` })).status).toBe(200);
    const nothing = await call<ErrorBody>('POST', '/api/v1/appsets/web/revert', { to: start });
    expect([nothing.status, nothing.body.code]).toEqual([409, 'nothing-to-revert']);
    const notPinned = await call<ErrorBody>('POST', '/api/v1/appsets/web/revert', {});
    expect([notPinned.status, notPinned.body.path]).toEqual([400, 'to']);
    const unknown = await call<ErrorBody>('POST', '/api/v1/appsets/web/revert', { to: 'no-such-branch' });
    expect([unknown.status, unknown.body.code, unknown.body.path]).toEqual([422, 'unknown-revision', 'to']);
    expect((await call<ErrorBody>('POST', '/api/v1/appsets/nope/revert', { to: start })).status).toBe(404);

    const worse = await commit({ 'app/config.yaml': configMap('everyone') }, 'web: hand it to everyone');
    const opened = await call<RevertView>('POST', '/api/v1/appsets/web/revert', {
      to: start,
      reason: 'ownership',
    });
    expect(opened.status).toBe(201);
    expect(opened.body).toMatchObject({
      to: start,
      head: worse,
      commits: [{ commit: worse, subject: 'web: hand it to everyone' }],
      branch: `flotilla/revert-web-${worse.slice(0, 12)}`,
      pullRequest: { url: `${hostApi.url}/acme/web/pull/2`, number: 2 },
      restores: true,
      pins: [],
      alreadyOpen: false,
    });
    expect(hostApi.pullRequests().at(-1)).toMatchObject({
      path: '/api/v1/repos/acme/web/pulls',
      authorization: `token ${SECRET}`,
    });
    expect(await audit('revert.opened')).toHaveLength(2);
  });
});
