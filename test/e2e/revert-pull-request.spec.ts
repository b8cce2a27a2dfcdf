import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestGitHostApi, type TestGitHostApi } from '@flotilla/hub/testing';
import { GuestbookFleet } from '../support/guestbook-fleet.js';

interface RolloutView {
  revision: string;
  status: string;
  targets: { cluster: string; pinnedAt: string | null }[];
}
interface AuditPage {
  items: { actor: string; action: string; scope: string; details: Record<string, unknown> }[];
}

const ADMIN = 'revert-e2e-admin-token';
const PUSH_TOKEN = 'revert-e2e-push-token';

/**
 * Rollback by revert, all real processes (hub on PostgreSQL and Redis, two simulated clusters with
 * one agent each, git daemon accepting pushes, a local recorder of GitHub's API): a bad image
 * reaches the canary, its agent rolls it back and the hub pins it; the hub opens the revert on a
 * branch of the repository; the test merges the branch as a person would; the fleet converges on
 * the merge and the pin is lifted, both steps in the audit log.
 */
describe('rollback by revert: from a bad commit on the canary to a merged revert', () => {
  let e2e: GuestbookFleet;
  let hostApi: TestGitHostApi;

  beforeAll(async () => {
    hostApi = await startTestGitHostApi();
    e2e = await GuestbookFleet.start({
      name: 'revert',
      clusters: 2,
      pollSeconds: 1,
      pushable: true,
      hubEnv: {
        ROLLOUT_TICK_SECONDS: '1',
        FLOTILLA_ADMIN_TOKEN: ADMIN,
        FLOTILLA_SECRETS_KEY: randomBytes(32).toString('hex'),
        REVERT_AUTHOR_NAME: 'Flotilla Hub',
        REVERT_AUTHOR_EMAIL: 'hub@flotilla.test',
      },
      labels: (i) => ({ ring: i === 0 ? 'canary' : 'main' }),
    });
  }, 120_000);
  afterAll(async () => {
    await e2e?.stop();
    await hostApi?.close();
  });

  it('opens the revert after the automatic rollback; merging it converges the fleet and lifts the pin', async () => {
    const { fleet } = e2e;
    const api = fleet.api;
    const [canary] = fleet.clusters.map((c) => c.name);
    await e2e.createAppSet(undefined, {
      spec: {
        rollout: {
          steps: [
            {
              name: 'canary',
              selector: { matchLabels: { ring: 'canary' } },
              maxUnavailable: 1,
              bakeTime: '2s',
              progressDeadline: '15s',
            },
            {
              name: 'main',
              selector: { matchLabels: { ring: 'main' } },
              maxUnavailable: 1,
              progressDeadline: '60s',
            },
          ],
        },
      },
    });
    const rollout = () => api.request<RolloutView>('GET', '/api/v1/rollouts/guestbook');
    const audit = async (action: string) =>
      (await api.request<AuditPage>('GET', `/api/v1/audit?action=${action}`)).items;
    const good = await e2e.head();
    await expect
      .poll(async () => (await rollout()).status, { timeout: 90_000, interval: 500 })
      .toBe('Completed');

    // The hub may push to the guestbook repository and open pull requests on "GitHub".
    const [repository] = await api.request<{ id: string; url: string }[]>('GET', '/api/v1/repositories');
    expect(repository?.url).toBe(e2e.repoUrl);
    await api.request('PUT', `/api/v1/repositories/${repository?.id ?? ''}/write-access`, {
      credentials: { type: 'https-token', username: 'flotilla-bot', token: PUSH_TOKEN },
      host: { kind: 'github', apiUrl: hostApi.url, repository: 'acme/guestbook' },
    });

    // A bad image reaches the canary, whose agent rolls it back past the deadline: the hub pins it.
    const bad = await e2e.commitImageTag('1.1.0-unready');
    await expect
      .poll(async () => (await rollout()).targets.find((t) => t.cluster === canary)?.pinnedAt, {
        timeout: 90_000,
        interval: 500,
      })
      .toBe(good);

    // The hub opens the revert of the bad commit on a branch of the repository.
    await expect
      .poll(async () => (await audit('revert.opened')).length, { timeout: 60_000, interval: 500 })
      .toBe(1);
    const [opened] = await audit('revert.opened');
    const branch = `flotilla/revert-guestbook-${bad.slice(0, 12)}`;
    expect(opened).toMatchObject({
      actor: 'system:automatic-rollback',
      scope: `target:${canary}-guestbook`,
      details: {
        pullRequest: `${hostApi.url}/acme/guestbook/pull/1`,
        branch,
        base: 'main',
        to: good,
        head: bad,
        commits: [{ commit: bad, subject: 'guestbook 1.1.0-unready' }],
        restores: true,
        pins: [expect.objectContaining({ target: `${canary}-guestbook`, revision: good })],
      },
    });
    expect(hostApi.pullRequests()).toEqual([
      expect.objectContaining({
        path: '/repos/acme/guestbook/pulls',
        authorization: `Bearer ${PUSH_TOKEN}`,
        body: expect.objectContaining({ head: branch, base: 'main' }) as object,
      }),
    ]);
    expect((await e2e.repo.raw(['log', '-1', '--format=%an', branch])).trim()).toBe('Flotilla Hub');

    // Asked from the CLI after the rollback: the same pull request, nothing new written.
    const asked = await e2e.flotilla(
      'revert',
      '--hub',
      '--target',
      `${canary}-guestbook`,
      '--token',
      ADMIN,
      '-o',
      'json',
    );
    expect(asked.code).toBe(0);
    expect(JSON.parse(asked.stdout)).toMatchObject({
      alreadyOpen: true,
      pullRequest: { url: `${hostApi.url}/acme/guestbook/pull/1` },
    });
    // The offline flags are refused with --hub (usage, exit 2), asking nothing.
    const mixed = await e2e.flotilla(
      'revert',
      '--hub',
      '--target',
      `${canary}-guestbook`,
      '--clusters',
      'c.yaml',
    );
    expect([mixed.code, mixed.stderr]).toEqual([
      2,
      expect.stringContaining('--clusters is for an offline revert'),
    ]);
    expect(hostApi.pullRequests()).toHaveLength(1);

    // A person merges the pull request (git, as they would); the hub follows main.
    await e2e.repo.raw(['merge', '--no-ff', '--no-edit', branch]);
    const merged = await e2e.head();

    // The merge renders what the canary was pinned to: the pin is lifted and the fleet converges.
    await expect
      .poll(async () => (await audit('pin.lifted')).length, { timeout: 60_000, interval: 500 })
      .toBe(1);
    const [lifted] = await audit('pin.lifted');
    expect(lifted).toMatchObject({
      actor: 'system:pin-lifting',
      scope: `target:${canary}-guestbook`,
      details: { revision: good, gitRevision: merged, revert: `${hostApi.url}/acme/guestbook/pull/1` },
    });
    expect(await api.request<unknown[]>('GET', '/api/v1/pins')).toEqual([]);
    await expect
      .poll(async () => (await rollout()).status, { timeout: 90_000, interval: 500 })
      .toBe('Completed');
    expect((await rollout()).revision).toBe(merged);
    await expect
      .poll(() => e2e.targetStates(), { timeout: 60_000, interval: 500 })
      .toEqual(e2e.allSyncedAt(merged));
    expect(await e2e.images()).toEqual(fleet.clusters.map(() => 'ghcr.io/example/guestbook-ui:1.0.0'));
  }, 300_000);
});
