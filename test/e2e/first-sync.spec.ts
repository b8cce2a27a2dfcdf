import { mkdtempSync, readFileSync, rmSync, writeFileSync, cpSync } from 'node:fs';
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
 * The first end-to-end path through Flotilla, all real processes: a hub on real PostgreSQL and
 * Redis, two simulated clusters with one agent each, and a Git repository served by `git daemon`.
 * A commit that changes an image tag must reach both clusters, and the hub must say so.
 */
describe('first end-to-end sync', () => {
  const work = mkdtempSync(join(tmpdir(), 'flotilla-e2e-'));
  const gitHost = new ProcessSupervisor();
  const redisPrefix = uniqueName('flotilla-e2e');
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
      namePrefix: 'e2e-',
      databaseUrl: db.url,
      redisUrl: TEST_REDIS_URL,
      redisPrefix,
      pollSeconds: 1,
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

  it('converges both clusters, then rolls a new image tag out to both', async () => {
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
      .poll(
        async () =>
          (await fleet.api.targets()).map((t) => [t.cluster, t.desiredRevision, t.syncStatus]).sort(),
        { timeout: 60_000, interval: 500 },
      )
      .toEqual(fleet.clusters.map((c) => [c.name, first, 'Synced']).sort());
    for (const c of fleet.clusters)
      expect(await deploymentImage(c.kubeconfigPath)).toBe('ghcr.io/example/guestbook-ui:1.0.0');

    const file = join(repoDir, 'apps/guestbook/deployment.yaml');
    writeFileSync(file, readFileSync(file, 'utf8').replace('guestbook-ui:1.0.0', 'guestbook-ui:1.1.0'));
    await repo.add('.').commit('guestbook 1.1.0');
    const second = (await repo.revparse(['HEAD'])).trim();

    await expect
      .poll(async () => Promise.all(fleet.clusters.map((c) => deploymentImage(c.kubeconfigPath))), {
        timeout: 60_000,
        interval: 500,
      })
      .toEqual(fleet.clusters.map(() => 'ghcr.io/example/guestbook-ui:1.1.0'));
    await expect
      .poll(
        async () =>
          (await fleet.api.targets()).map((t) => [t.cluster, t.desiredRevision, t.syncStatus]).sort(),
        { timeout: 30_000, interval: 500 },
      )
      .toEqual(fleet.clusters.map((c) => [c.name, second, 'Synced']).sort());

    for (const target of await fleet.api.targets()) {
      const runs = await fleet.api.request<{ items: { revision: string; outcome: string }[] }>(
        'GET',
        `/api/v1/sync-runs?target=${encodeURIComponent(target.name)}`,
      );
      expect(runs.items.some((r) => r.revision === second && r.outcome === 'Succeeded')).toBe(true);
    }
  }, 180_000);
});
