import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startSimFleet, type SimCluster } from '@flotilla/kube-sim';
import { freePort } from './free-port.js';
import { HubClient } from './hub-client.js';
import { ProcessSupervisor, type SupervisedProcess } from './process-supervisor.js';
import { deleteRedisKeys, ensureRedis } from './redis-server.js';
import { waitFor } from './wait-for.js';

/** The repository root: this file sits at apps/cli/{src,dist}/fleet/, at the same depth either way. */
export const REPO_ROOT = fileURLToPath(new URL('../../../../', import.meta.url));
const HUB_MAIN = join(REPO_ROOT, 'apps/hub/dist/main.js');
const AGENT_MAIN = join(REPO_ROOT, 'apps/agent/dist/main.js');

export interface LocalFleetOptions {
  /** Working directory for the hub's data, agent state, kubeconfigs and logs. */
  workDir: string;
  clusters: number;
  namePrefix?: string;
  /** Labels per cluster, by index. */
  labels?: (index: number) => Record<string, string>;
  /** PostgreSQL URL; when absent the hub uses its embedded PGlite database under workDir. */
  databaseUrl?: string;
  /** Redis to use; a private redis-server is started when it does not answer. */
  redisUrl?: string;
  redisPrefix?: string;
  /**
   * The prefix is this fleet's alone (the demo's carries its pid): `stop()` deletes its keys from a
   * shared Redis, so runs leave Redis as they found it. A private redis-server goes with its data.
   */
  dropRedisKeysOnStop?: boolean;
  /** How often the hub polls Git, in seconds. */
  pollSeconds?: number;
  /** Progress lines for people. */
  onProgress?: (line: string) => void;
  /** Extra environment for the hub process. */
  hubEnv?: Record<string, string>;
  /** Extra environment for every agent process (e.g. `SOPS_AGE_KEY`). */
  agentEnv?: Record<string, string>;
  /** The Kubernetes version each simulated cluster reports, by index (`v1.30.4`; default kube-sim's). */
  kubernetesVersion?: (index: number) => string | undefined;
}

export interface FleetCluster {
  name: string;
  sim: SimCluster;
  kubeconfigPath: string;
  agent: SupervisedProcess;
}

/**
 * A whole Flotilla installation on one machine: a hub process, Redis (the given one or a private
 * one), simulated clusters served in this process, and one agent process per cluster. Used by
 * `flotilla demo`, the end-to-end tests and the benchmarks; `stop()` leaves nothing running.
 */
export class LocalFleet {
  readonly supervisor = new ProcessSupervisor();
  hub!: SupervisedProcess;
  hubUrl = '';
  api!: HubClient;
  redisUrl = '';
  readonly clusters: FleetCluster[] = [];
  private simStop: (() => Promise<void>) | undefined;
  private sharedRedis = false;

  constructor(private readonly opts: LocalFleetOptions) {}

  /** Creates and starts a fleet; on failure everything started so far is stopped. */
  static async start(opts: LocalFleetOptions): Promise<LocalFleet> {
    const fleet = new LocalFleet(opts);
    await fleet.start();
    return fleet;
  }

  /** Starts everything; on failure stops what it had started and rethrows. */
  async start(): Promise<void> {
    try {
      await this.boot();
    } catch (err) {
      await this.stop();
      throw err;
    }
  }

  private progress(line: string): void {
    this.opts.onProgress?.(line);
  }

  private async boot(): Promise<void> {
    const { workDir } = this.opts;
    for (const sub of ['logs', 'kubeconfigs', 'agents', 'hub'])
      mkdirSync(join(workDir, sub), { recursive: true });

    const redis = await ensureRedis(this.opts.redisUrl ?? 'redis://127.0.0.1:6379', this.supervisor);
    this.redisUrl = redis.url;
    this.sharedRedis = !redis.started;
    this.progress(
      redis.started ? `started a private redis-server at ${redis.url}` : `using Redis at ${redis.url}`,
    );

    await this.startHub();

    const prefix = this.opts.namePrefix ?? 'sim-';
    const fleet = await startSimFleet({
      count: this.opts.clusters,
      namePrefix: prefix,
      kubeconfigDir: join(workDir, 'kubeconfigs'),
      ...(this.opts.kubernetesVersion ? { kubernetesVersion: this.opts.kubernetesVersion } : {}),
    });
    this.simStop = () => fleet.stop();
    this.progress(`started ${fleet.clusters.length} simulated clusters`);

    for (const [index, sim] of fleet.clusters.entries()) {
      const registered = await this.api.registerCluster(sim.name, this.opts.labels?.(index) ?? {});
      const kubeconfigPath = sim.kubeconfigPath ?? join(workDir, 'kubeconfigs', `${sim.name}.kubeconfig`);
      const agent = this.startAgent(sim.name, kubeconfigPath, registered.bootstrapToken);
      this.clusters.push({ name: sim.name, sim, kubeconfigPath, agent });
      this.progress(`registered ${sim.name} and started its agent (pid ${agent.pid})`);
    }
  }

  /** Starts (or restarts) the hub process and waits until it is ready. */
  async startHub(): Promise<void> {
    const { workDir } = this.opts;
    const port = this.hubUrl ? Number(new URL(this.hubUrl).port) : await freePort();
    this.hubUrl = `http://127.0.0.1:${port}`;
    // A fleet whose hub has an admin token (hubEnv) is driven with it.
    this.api = new HubClient(this.hubUrl, this.opts.hubEnv?.FLOTILLA_ADMIN_TOKEN);
    const env: Record<string, string | undefined> = {
      HOST: '127.0.0.1',
      PORT: String(port),
      REDIS_URL: this.redisUrl,
      REDIS_PREFIX: this.opts.redisPrefix ?? 'flotilla',
      FLOTILLA_DATA_DIR: join(workDir, 'hub'),
      SOURCE_POLL_INTERVAL_SECONDS: String(this.opts.pollSeconds ?? 2),
      DATABASE_URL: this.opts.databaseUrl,
      // A local fleet (the demo, the end-to-end tests) is a development hub unless hubEnv says otherwise.
      FLOTILLA_DEV_MODE: '1',
      ...this.opts.hubEnv,
    };
    if (!this.opts.databaseUrl) delete env['DATABASE_URL'];
    this.hub = this.supervisor.spawn('hub', process.execPath, [HUB_MAIN], {
      env,
      logFile: join(workDir, 'logs', 'hub.log'),
    });
    const exitedEarly = this.hub.exited.then((code) => {
      throw new Error(
        `the hub exited (${code}) before it was ready; see ${join(workDir, 'logs', 'hub.log')}`,
      );
    });
    await Promise.race([
      waitFor('the hub to be ready', async () => ((await this.api.ready()) ? true : undefined), {
        timeoutMs: 60_000,
      }),
      exitedEarly,
    ]);
    exitedEarly.catch(() => undefined);
    this.progress(`hub ready at ${this.hubUrl}`);
  }

  /** Stops cluster i's agent (SIGTERM, a clean stop); its state dir stays for `resumeAgent`. */
  async stopAgent(i: number): Promise<void> {
    const c = this.clusters[i];
    if (!c) throw new Error(`the fleet has no cluster #${i}`);
    await this.supervisor.stop(c.agent);
  }

  /** Starts cluster i's agent again from its state dir (its credential, cached assignments, queue). */
  resumeAgent(i: number): void {
    const c = this.clusters[i];
    if (!c) throw new Error(`the fleet has no cluster #${i}`);
    c.agent = this.startAgent(c.name, c.kubeconfigPath, undefined);
  }

  private startAgent(
    cluster: string,
    kubeconfigPath: string,
    bootstrapToken: string | undefined,
  ): SupervisedProcess {
    const { workDir } = this.opts;
    return this.supervisor.spawn(`agent-${cluster}`, process.execPath, [AGENT_MAIN], {
      env: {
        FLOTILLA_HUB_URL: this.hubUrl,
        FLOTILLA_CLUSTER_NAME: cluster,
        ...(bootstrapToken && { FLOTILLA_BOOTSTRAP_TOKEN: bootstrapToken }),
        KUBECONFIG: kubeconfigPath,
        FLOTILLA_STATE_DIR: join(workDir, 'agents', cluster),
        ...this.opts.agentEnv,
      },
      logFile: join(workDir, 'logs', `agent-${cluster}.log`),
    });
  }

  async stop(): Promise<void> {
    await this.supervisor.stopAll();
    await this.simStop?.();
    this.simStop = undefined;
    // After the hub is gone, so nothing writes a key behind the sweep.
    if (this.opts.dropRedisKeysOnStop && this.sharedRedis && this.opts.redisPrefix) {
      await deleteRedisKeys(this.redisUrl, this.opts.redisPrefix);
      this.sharedRedis = false;
    }
  }
}
