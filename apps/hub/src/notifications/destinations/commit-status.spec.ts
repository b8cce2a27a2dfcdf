import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestGitHostApi, type TestGitHostApi } from '../../testing/test-git-host-api.js';
import type { NotificationMessage } from '../notification-message.js';
import { repositoryPathOf, sendCommitStatus } from './commit-status.js';

const sha = '0123456789abcdef0123456789abcdef01234567';
const message = (trigger: string, revision: string | null = sha): NotificationMessage => ({
  id: 'd1',
  policy: 'p',
  trigger,
  title: `${trigger}: web`,
  text: '',
  count: 1,
  appSet: 'web',
  revision,
  events: [],
});

/** Each provider's commit-status call, against a local server speaking their endpoints. */
describe('commit statuses (GitHub, GitLab, Gitea APIs on 127.0.0.1)', () => {
  let api: TestGitHostApi;
  beforeAll(async () => {
    api = await startTestGitHostApi();
  });
  afterAll(async () => {
    await api.close();
  });
  const opts = { timeoutMs: 5_000, repoUrl: 'https://git.example.org/acme/web.git' };

  it('GitHub: POST /repos/{owner}/{repo}/statuses/{sha} with a bearer token', async () => {
    await sendCommitStatus(
      { provider: 'github', apiUrl: api.url },
      'ghp_x',
      message('rollout-started'),
      opts,
    );
    expect(api.statuses().at(-1)).toMatchObject({
      path: `/repos/acme/web/statuses/${sha}`,
      authorization: 'Bearer ghp_x',
      body: { state: 'pending', context: 'flotilla/web', description: 'rollout-started: web' },
    });
  });

  it("GitLab: the project's encoded path, PRIVATE-TOKEN, and GitLab's state names", async () => {
    const config = { provider: 'gitlab' as const, apiUrl: `${api.url}/api/v4`, repository: 'group/sub/web' };
    await sendCommitStatus(config, 'glpat', message('rollout-halted'), opts);
    expect(api.statuses().at(-1)).toMatchObject({
      path: `/api/v4/projects/group%2Fsub%2Fweb/statuses/${sha}`,
      privateToken: 'glpat',
      body: { state: 'failed', name: 'flotilla/web' },
    });
    await sendCommitStatus(config, 'glpat', message('rollout-started'), opts);
    expect(api.statuses().at(-1)?.body['state']).toBe('running');
  });

  it('Gitea: /api/v1/repos/…/statuses/{sha} with "token" auth', async () => {
    const config = { provider: 'gitea' as const, apiUrl: `${api.url}/api/v1`, context: 'deploy/prod' };
    await sendCommitStatus(config, 'tea', message('rollout-completed'), opts);
    expect(api.statuses().at(-1)).toMatchObject({
      path: `/api/v1/repos/acme/web/statuses/${sha}`,
      authorization: 'token tea',
      body: { state: 'success', context: 'deploy/prod' },
    });
  });

  it('fails clearly without a commit, a repository, or on a 404', async () => {
    const github = { provider: 'github' as const, apiUrl: api.url };
    await expect(sendCommitStatus(github, 't', message('rollout-started', 'abc'), opts)).rejects.toThrow(
      'the event names no single commit',
    );
    await expect(
      sendCommitStatus(github, 't', message('rollout-started'), { ...opts, repoUrl: 'file:///tmp/x' }),
    ).rejects.toThrow('no repository to set the status on');
    await expect(
      sendCommitStatus(
        { provider: 'github', apiUrl: `${api.url}/nope` },
        't',
        message('rollout-started'),
        opts,
      ),
    ).rejects.toThrow('answered 404');
  });

  it('reads owner/name from HTTPS, SSH and scp-like URLs', () => {
    expect(repositoryPathOf('https://github.com/acme/web.git')).toBe('acme/web');
    expect(repositoryPathOf('ssh://git@gitlab.com/group/sub/web')).toBe('group/sub/web');
    expect(repositoryPathOf('git@github.com:acme/web.git')).toBe('acme/web');
    expect(repositoryPathOf('file:///tmp/x')).toBeNull();
  });
});
