import { createHmac } from 'node:crypto';
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { AppsV1Api, KubeConfig } from '@kubernetes/client-node';
import { simpleGit, type SimpleGit } from 'simple-git';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LocalFleet, ProcessSupervisor, REPO_ROOT, startGitDaemon } from '@flotilla/cli/fleet';
import {
  createTestDatabase,
  deleteRedisPrefix,
  TEST_REDIS_URL,
  uniqueName,
} from '../support/test-services.js';

/**
 * A push webhook instead of polling: the hub polls Git only every 5 minutes, so a new commit can
 * reach the clusters within the test only through a signed GitHub webhook. A wrongly signed one is
 * refused and moves nothing.
 */
describe('push webhook end to end', () => {
  const secret = `e2e-${uniqueName('webhook-secret')}`;
  const work = mkdtempSync(join(tmpdir(), 'flotilla-e2e-webhook-'));
  const gitHost = new ProcessSupervisor();
  const redisPrefix = uniqueName('flotilla-e2e-webhook');
  let db: { url: string; drop: () => Promise<void> };
  let fleet: LocalFleet;
  let repo: SimpleGit;
  let repoUrl: string;
  const repoDir = join(work, 'git', 'guestbook.git');

  beforeAll(async () => {
    db = await createTestDatabase();
    cpSync(join(REPO_ROOT, 'examples/demo-fleet'), repoDir, { recursive: true });
    repo = simpleGit(repoDir);
    await repo.init(['--initial-branch=main']);
    await repo.addConfig('user.name', 'E2E').addConfig('user.email', 'e2e@flotilla.local');
    await repo.add('.').commit('initial');
    const daemon = await startGitDaemon(join(work, 'git'), gitHost);
    repoUrl = daemon.url('guestbook.git');
    fleet = await LocalFleet.start({
      workDir: join(work, 'fleet'),
      clusters: 2,
      namePrefix: 'wh-',
      databaseUrl: db.url,
      redisUrl: TEST_REDIS_URL,
      redisPrefix,
      pollSeconds: 300,
      hubEnv: { FLOTILLA_WEBHOOK_SECRET: secret },
    });
  }, 120_000);

  afterAll(async () => {
    await fleet?.stop();
    await gitHost.stopAll();
    await db?.drop();
    await deleteRedisPrefix(redisPrefix);
    rmSync(work, { recursive: true, force: true });
  });

  function deploymentImage(kubeconfigPath: string): Promise<string | undefined> {
    const kc = new KubeConfig();
    kc.loadFromFile(kubeconfigPath);
    return kc
      .makeApiClient(AppsV1Api)
      .readNamespacedDeployment({ name: 'guestbook-ui', namespace: 'guestbook' })
      .then((d) => d.spec?.template.spec?.containers[0]?.image)
      .catch(() => undefined);
  }

  const targets = async () =>
    (await fleet.api.targets()).map((t) => [t.cluster, t.desiredRevision, t.syncStatus]).sort();

  /** A GitHub push delivery for the repository, signed with `key`. */
  function sendPush(after: string, key: string): Promise<Response> {
    const body = JSON.stringify({
      ref: 'refs/heads/main',
      before: '0'.repeat(40),
      after,
      repository: {
        clone_url: repoUrl,
        html_url: repoUrl.replace(/\.git$/, ''),
        ssh_url: 'git@example.com:x.git',
      },
    });
    return fetch(`${fleet.hubUrl}/api/v1/webhooks/git`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'x-github-event': 'push',
        'x-github-delivery': uniqueName('delivery'),
        'x-hub-signature-256': `sha256=${createHmac('sha256', key).update(body).digest('hex')}`,
      },
      body,
    });
  }

  it('fetches, renders and delivers a pushed commit as soon as a signed webhook arrives', async () => {
    await fleet.api.createAppSet({
      apiVersion: 'flotilla.dev/v1alpha1',
      kind: 'ApplicationSet',
      metadata: { name: 'guestbook' },
      spec: {
        generators: [{ list: { elements: fleet.clusters.map((c) => ({ cluster: c.name })) } }],
        template: {
          metadata: { name: '{{cluster}}-guestbook' },
          spec: {
            source: { repoURL: repoUrl, targetRevision: 'main', path: 'apps/guestbook' },
            destination: { name: '{{cluster}}', namespace: 'guestbook' },
            syncPolicy: { automated: { prune: true, selfHeal: true } },
          },
        },
      },
    });
    const first = (await repo.revparse(['HEAD'])).trim();
    await expect
      .poll(targets, { timeout: 60_000, interval: 500 })
      .toEqual(fleet.clusters.map((c) => [c.name, first, 'Synced']).sort());

    const file = join(repoDir, 'apps/guestbook/deployment.yaml');
    writeFileSync(file, readFileSync(file, 'utf8').replace('guestbook-ui:1.0.0', 'guestbook-ui:1.2.0'));
    await repo.add('.').commit('guestbook 1.2.0');
    const second = (await repo.revparse(['HEAD'])).trim();

    const refused = await sendPush(second, 'a-secret-the-hub-does-not-know');
    expect(refused.status).toBe(401);
    expect(((await refused.json()) as { code: string }).code).toBe('webhook-signature-invalid');
    // Give a wrongly queued fetch time to show; nothing may move.
    await new Promise((resolve) => setTimeout(resolve, 3_000));
    expect(await targets()).toEqual(fleet.clusters.map((c) => [c.name, first, 'Synced']).sort());
    const [repository] = await fleet.api.repositories();
    expect(repository?.url).toBe(repoUrl);

    const accepted = await sendPush(second, secret);
    expect(accepted.status).toBe(202);
    expect(await accepted.json()).toEqual({ matched: [repository?.id], queued: 1 });

    await expect
      .poll(async () => Promise.all(fleet.clusters.map((c) => deploymentImage(c.kubeconfigPath))), {
        timeout: 60_000,
        interval: 500,
      })
      .toEqual(fleet.clusters.map(() => 'ghcr.io/example/guestbook-ui:1.2.0'));
    await expect
      .poll(targets, { timeout: 30_000, interval: 500 })
      .toEqual(fleet.clusters.map((c) => [c.name, second, 'Synced']).sort());
  }, 180_000);
});
