import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { AppsV1Api, KubeConfig } from '@kubernetes/client-node';
import { simpleGit, type SimpleGit } from 'simple-git';
import type { SyncRunView, TargetOperationView } from '@flotilla/contract';
import { LocalFleet, ProcessSupervisor, REPO_ROOT, startGitDaemon } from '@flotilla/cli/fleet';
import { createTestDatabase, deleteRedisPrefix, TEST_REDIS_URL, uniqueName } from './test-services.js';
import { execProcess, type ProcessOutcome } from './exec-process.js';

const CLI_MAIN = join(REPO_ROOT, 'apps/cli/dist/main.js');

export interface GuestbookFleetOptions {
  /** Prefix of the simulated clusters' names, also used for the temp dir and Redis prefix. */
  name: string;
  clusters: number;
  pollSeconds: number;
  hubEnv?: Record<string, string>;
  /** Labels per cluster, by index (rollout steps select clusters by label). */
  labels?: (index: number) => Record<string, string>;
  /** The Kubernetes version each cluster reports, by index (`v1.30.4`). */
  kubernetesVersion?: (index: number) => string | undefined;
  /** The git daemon accepts pushes (the hub writing a revert branch, as to a Git host). */
  pushable?: boolean;
}

/**
 * The end-to-end scenario most tests start from: the example guestbook app in a Git repository
 * served by `git daemon`, and a whole local fleet (hub on real PostgreSQL and Redis, simulated
 * clusters, one agent each). `stop()` removes every process, database, key and file it made.
 */
export class GuestbookFleet {
  private constructor(
    readonly fleet: LocalFleet,
    readonly repo: SimpleGit,
    readonly repoDir: string,
    readonly repoUrl: string,
    private readonly workDir: string,
    private readonly cleanup: () => Promise<void>,
  ) {}

  static async start(opts: GuestbookFleetOptions): Promise<GuestbookFleet> {
    const work = mkdtempSync(join(tmpdir(), `flotilla-e2e-${opts.name}-`));
    const gitHost = new ProcessSupervisor();
    const redisPrefix = uniqueName(`flotilla-e2e-${opts.name}`);
    const db = await createTestDatabase();
    let fleet: LocalFleet | undefined;
    const cleanup = async () => {
      await fleet?.stop();
      await gitHost.stopAll();
      await db.drop();
      await deleteRedisPrefix(redisPrefix);
      rmSync(work, { recursive: true, force: true });
    };
    try {
      const repoDir = join(work, 'git', 'guestbook.git');
      cpSync(join(REPO_ROOT, 'examples/demo-fleet'), repoDir, { recursive: true });
      const repo = simpleGit(repoDir);
      await repo.init(['--initial-branch=main']);
      await repo.addConfig('user.name', 'E2E').addConfig('user.email', 'e2e@flotilla.local');
      await repo.add('.').commit('initial');
      const daemon = await startGitDaemon(join(work, 'git'), gitHost, { push: opts.pushable === true });
      fleet = await LocalFleet.start({
        workDir: join(work, 'fleet'),
        clusters: opts.clusters,
        namePrefix: `${opts.name}-`,
        databaseUrl: db.url,
        redisUrl: TEST_REDIS_URL,
        redisPrefix,
        pollSeconds: opts.pollSeconds,
        ...(opts.hubEnv ? { hubEnv: opts.hubEnv } : {}),
        ...(opts.labels ? { labels: opts.labels } : {}),
        ...(opts.kubernetesVersion ? { kubernetesVersion: opts.kubernetesVersion } : {}),
      });
      return new GuestbookFleet(fleet, repo, repoDir, daemon.url('guestbook.git'), work, cleanup);
    } catch (err) {
      await cleanup();
      throw err;
    }
  }

  stop(): Promise<void> {
    return this.cleanup();
  }

  /**
   * Real kubectl against cluster `index`, in the guestbook namespace, as an operator would type it;
   * its discovery cache and HOME live in the fleet's temp dir, so nothing outside it is touched.
   */
  kubectl(index: number, ...args: string[]): Promise<ProcessOutcome> {
    const cluster = this.fleet.clusters[index];
    if (!cluster) throw new Error(`the fleet has no cluster #${index}`);
    return execProcess('kubectl', ['-n', 'guestbook', ...args], {
      KUBECONFIG: cluster.kubeconfigPath,
      KUBECACHEDIR: join(this.workDir, 'kubectl-cache'),
      HOME: this.workDir,
    });
  }

  /**
   * The built CLI (`apps/cli/dist/main.js`) against this fleet's hub, as a person runs it, with no
   * config file of theirs in the way. A non-zero exit is an outcome to assert on.
   */
  flotilla(...args: string[]): Promise<ProcessOutcome> {
    return execProcess(process.execPath, [CLI_MAIN, ...args], {
      FLOTILLA_HUB_URL: this.fleet.hubUrl,
      FLOTILLA_CONFIG: '/nonexistent/flotilla.yaml',
    });
  }

  /** The guestbook on every cluster of the fleet, from `main`: auto-synced unless a policy is given. */
  createAppSet(
    syncPolicy: Record<string, unknown> = { automated: { prune: true, selfHeal: true } },
    /** `clusters`: the indexes the list generator names (default all); `spec`: more spec fields (rollout, deletionGuard). */
    more: { clusters?: number[]; spec?: Record<string, unknown> } = {},
  ): Promise<unknown> {
    const clusters = more.clusters ? more.clusters.map((i) => this.fleet.clusters[i]!) : this.fleet.clusters;
    return this.fleet.api.createAppSet({
      apiVersion: 'flotilla.dev/v1alpha1',
      kind: 'ApplicationSet',
      metadata: { name: 'guestbook' },
      spec: {
        ...more.spec,
        generators: [{ list: { elements: clusters.map((c) => ({ cluster: c.name })) } }],
        template: {
          metadata: { name: '{{cluster}}-guestbook' },
          spec: {
            source: { repoURL: this.repoUrl, targetRevision: 'main', path: 'apps/guestbook' },
            destination: { name: '{{cluster}}', namespace: 'guestbook' },
            syncPolicy,
          },
        },
      },
    });
  }

  /** The manual sync requests of `target`, newest first (GET /api/v1/targets/:name/operations). */
  operations(target: string): Promise<TargetOperationView[]> {
    return this.fleet.api.request<TargetOperationView[]>(
      'GET',
      `/api/v1/targets/${encodeURIComponent(target)}/operations`,
    );
  }

  /** The sync history of `target`, newest first; `R` narrows what a spec reads of each run. */
  async syncRuns<R = SyncRunView>(target: string): Promise<R[]> {
    const page = await this.fleet.api.request<{ items: R[] }>(
      'GET',
      `/api/v1/sync-runs?target=${encodeURIComponent(target)}`,
    );
    return page.items;
  }

  async head(): Promise<string> {
    return (await this.repo.revparse(['HEAD'])).trim();
  }

  /** Commits a new image tag for the guestbook and returns the new commit. */
  async commitImageTag(tag: string): Promise<string> {
    const file = join(this.repoDir, 'apps/guestbook/deployment.yaml');
    writeFileSync(file, readFileSync(file, 'utf8').replace(/guestbook-ui:[\w.-]+/, `guestbook-ui:${tag}`));
    await this.repo.add('.').commit(`guestbook ${tag}`);
    return this.head();
  }

  /** `[cluster, desired revision, sync status]` per target, sorted. */
  async targetStates(): Promise<(string | null)[][]> {
    return (await this.fleet.api.targets()).map((t) => [t.cluster, t.desiredRevision, t.syncStatus]).sort();
  }

  /** What every cluster should show when all targets are Synced at `revision`. */
  allSyncedAt(revision: string): (string | null)[][] {
    return this.fleet.clusters.map((c) => [c.name, revision, 'Synced']).sort();
  }

  /** The guestbook image each cluster runs, read from its API server. */
  images(): Promise<(string | undefined)[]> {
    return Promise.all(
      this.fleet.clusters.map((c) => {
        const kc = new KubeConfig();
        kc.loadFromFile(c.kubeconfigPath);
        return kc
          .makeApiClient(AppsV1Api)
          .readNamespacedDeployment({ name: 'guestbook-ui', namespace: 'guestbook' })
          .then((d) => d.spec?.template.spec?.containers[0]?.image)
          .catch(() => undefined);
      }),
    );
  }
}
