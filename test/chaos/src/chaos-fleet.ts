import { createHmac, randomBytes } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { KubeConfig, KubernetesObjectApi, PatchStrategy } from '@kubernetes/client-node';
import pg from 'pg';
import { pino, type Logger } from 'pino';
import { startAgent, type Agent } from '@flotilla/agent';
import {
  freePort,
  HubClient,
  ProcessSupervisor,
  REPO_ROOT,
  startGitDaemon,
  waitFor,
  type SupervisedProcess,
} from '@flotilla/cli/fleet';
import { startSimFleet, type SimFleet } from '@flotilla/kube-sim';
import { AppRepo, appName, fleetAppSet, type AppShape } from '../../perf/src/app-repo.js';
import { watchConfigMaps } from '../../perf/src/config-map-watch.js';
import { AgentProxy } from './agent-proxy.js';
import { PrivatePostgres, PrivateRedis } from './private-services.js';

export interface ChaosFleetOptions {
  clusters: number;
  apps: number;
  progress: (line: string) => void;
}

interface HubProcess {
  index: number;
  port: number;
  url: string;
  proc: SupervisedProcess | undefined;
  /** Set while the harness itself stops or kills this hub, so the exit is not counted as a crash. */
  expectExit: boolean;
}

/** A hub process that exited without being told to, and was started again. */
export interface HubCrash {
  hub: number;
  exit: number | string;
  /** The last lines of its log before the exit, for the report. */
  cause: string;
}

interface FleetAgent {
  cluster: string;
  stateDir: string;
  kubeConfig: KubeConfig;
  kubeconfigPath: string;
  /** The agent when it runs in this process (the usual case). */
  agent: Agent | undefined;
  /** The agent when it runs as its own OS process (`apps/agent/dist/main.js`), so it can be killed -9. */
  proc: SupervisedProcess | undefined;
}

const AGENT_MAIN = join(REPO_ROOT, 'apps/agent/dist/main.js');

/** What the hub's rows say about the agents' reports, compared with what the agents sent. */
export interface LedgerCheck {
  sent: number;
  stored: number;
  /** Report ids an agent posted that the hub never stored. */
  lost: string[];
  /** Rows whose report id no agent ever posted. */
  phantom: string[];
  /** Sync reports (about live targets) with no SyncRun row. */
  missingHistory: string[];
  /** Sync and drift reports with no audit event naming them. */
  missingAudit: string[];
  /** Report ids named by more than one audit event. */
  duplicateAudit: string[];
  /** Reports posted more than once (replays after a cut connection); harmless when nothing doubles. */
  replayed: number;
  /** Report batches still queued on an agent's disk. */
  queued: number;
}

const WEBHOOK_PATH = '/api/v1/webhooks/git';

/** A hub moved targets to an older commit than one it had already rolled out. */
export class DesiredStateRegression extends Error {
  override name = 'DesiredStateRegression';
}

/**
 * A whole Flotilla installation whose every part a chaos scenario may break: its own PostgreSQL
 * cluster and redis-server (never the shared ones), a Git repository served by `git daemon`, one or
 * more real hub processes, simulated clusters, and one in-process agent per cluster (`startAgent`,
 * each with its own identity, state dir and long-poll) that reaches the hubs only through an
 * {@link AgentProxy}, which keeps the agent side of the report ledger.
 */
export class ChaosFleet {
  readonly supervisor = new ProcessSupervisor();
  readonly shape: AppShape;
  readonly hubs: HubProcess[] = [];
  readonly agents: FleetAgent[] = [];
  readonly commits: string[] = [];
  /** Hubs that died on their own during the run; each was restarted, as a Deployment would. */
  readonly hubCrashes: HubCrash[] = [];
  api!: HubClient;
  postgres!: PrivatePostgres;
  redis!: PrivateRedis;
  proxy!: AgentProxy;
  repo!: AppRepo;
  repoUrl = '';
  repositoryId = '';
  /** Per cluster: app namespace → the `release` its ConfigMap carries now. */
  readonly releases: Map<string, string>[] = [];
  /** Every release value any cluster ever showed (a tampered bundle must never appear here). */
  readonly releasesSeen = new Set<string>();
  private sims: SimFleet | undefined;
  private readonly watches: { stop(): void }[] = [];
  private readonly webhookSecret = randomBytes(16).toString('hex');
  private readonly secretsKey = randomBytes(32).toString('hex');
  private readonly redisPrefix = 'flotilla-chaos';
  private readonly agentLog: Logger;
  private stopping = false;

  private constructor(
    readonly workDir: string,
    private readonly opts: ChaosFleetOptions,
  ) {
    this.shape = { apps: opts.apps, deployments: 1, services: 0, configMaps: 1 };
    this.agentLog = pino(
      { level: 'warn' },
      pino.destination({ dest: join(workDir, 'agents.log'), mkdir: true }),
    );
  }

  static async start(opts: ChaosFleetOptions): Promise<ChaosFleet> {
    const fleet = new ChaosFleet(await mkdtemp(join(tmpdir(), 'flotilla-chaos-')), opts);
    try {
      await fleet.boot();
    } catch (err) {
      await fleet.stop();
      throw err;
    }
    return fleet;
  }

  get clusterCount(): number {
    return this.opts.clusters;
  }

  private progress(line: string): void {
    this.opts.progress(line);
  }

  private async boot(): Promise<void> {
    this.postgres = await PrivatePostgres.start(this.workDir, this.supervisor);
    this.redis = await PrivateRedis.start(this.workDir, this.supervisor);
    this.progress(`private PostgreSQL on :${this.postgres.port}, private Redis on :${this.redis.port}`);
    this.repo = await AppRepo.create(join(this.workDir, 'git', 'fleet.git'), this.shape);
    this.commits.push((await this.repo.git.revparse(['HEAD'])).trim());
    const daemon = await startGitDaemon(join(this.workDir, 'git'), this.supervisor);
    this.repoUrl = daemon.url('fleet.git');

    const first = await this.addHub();
    this.api = new HubClient(first.url);
    this.proxy = await AgentProxy.start([first.url]);

    this.sims = await startSimFleet({
      count: this.opts.clusters,
      namePrefix: 'chaos-',
      kubeconfigDir: join(this.workDir, 'kube'),
    });
    for (const [i, sim] of this.sims.clusters.entries()) {
      const kubeConfig = new KubeConfig();
      kubeConfig.loadFromString(sim.kubeconfig());
      const reg = await this.api.registerCluster(sim.name);
      const entry: FleetAgent = {
        cluster: sim.name,
        stateDir: join(this.workDir, 'agents', sim.name),
        kubeConfig,
        kubeconfigPath: sim.kubeconfigPath ?? '',
        agent: undefined,
        proc: undefined,
      };
      this.agents.push(entry);
      await this.startAgent(i, reg.bootstrapToken);
      const releases = new Map<string, string>();
      this.releases.push(releases);
      const watchConfig = new KubeConfig();
      watchConfig.loadFromString(sim.kubeconfig());
      this.watches.push(
        await watchConfigMaps(watchConfig, (obj) => {
          const ns = obj.metadata?.namespace;
          if (obj.metadata?.name !== 'settings-0' || !ns) return;
          const release = obj.data?.['release'] ?? '';
          releases.set(ns, release);
          this.releasesSeen.add(release);
        }),
      );
    }
    this.progress(`${this.agents.length} simulated clusters, each with its agent in this process`);
  }

  /** Starts another hub process on the same PostgreSQL and Redis (a replica). */
  async addHub(): Promise<HubProcess> {
    const hub: HubProcess = {
      index: this.hubs.length,
      port: await freePort(),
      url: '',
      proc: undefined,
      expectExit: false,
    };
    hub.url = `http://127.0.0.1:${hub.port}`;
    this.hubs.push(hub);
    await this.startHub(hub);
    return hub;
  }

  /**
   * Starts (or restarts, on the same port) one hub process and waits until it is ready. A hub that
   * later exits on its own is recorded as a crash and started again after a second, as Kubernetes
   * would restart the pod: the run then shows whether anything was lost, and the summary names the crash.
   */
  async startHub(hub: HubProcess): Promise<void> {
    const logFile = join(this.workDir, `hub-${hub.index}.log`);
    hub.expectExit = false;
    const proc = this.supervisor.spawn(
      `hub-${hub.index}`,
      process.execPath,
      [join(REPO_ROOT, 'apps/hub/dist/main.js')],
      {
        env: {
          HOST: '127.0.0.1',
          PORT: String(hub.port),
          DATABASE_URL: this.postgres.url,
          REDIS_URL: this.redis.url,
          REDIS_PREFIX: this.redisPrefix,
          FLOTILLA_DATA_DIR: join(this.workDir, `hub-${hub.index}`),
          FLOTILLA_WEBHOOK_SECRET: this.webhookSecret,
          // Notification destinations are sealed with it (the notify-two-hubs run makes one).
          FLOTILLA_SECRETS_KEY: this.secretsKey,
          // Webhooks bring commits in; the poll is only the safety net a real installation has.
          SOURCE_POLL_INTERVAL_SECONDS: '60',
          LOG_LEVEL: 'warn',
          FLOTILLA_DEV_MODE: '1',
        },
        logFile,
      },
    );
    hub.proc = proc;
    const client = new HubClient(hub.url);
    const exited = proc.exited.then((code) => {
      // The workdir is removed at the end of the run: the reason goes into the message itself
      // (main.ts writes one `flotilla hub: cannot start: …` line).
      const last = readFileSync(logFile, 'utf8').trim().split('\n').at(-1)?.slice(0, 300) ?? '';
      throw new Error(`hub ${hub.index} exited (${code}) before it was ready: ${last} (log ${logFile})`);
    });
    await Promise.race([
      waitFor(`hub ${hub.index} to be ready`, async () => ((await client.ready()) ? true : undefined), {
        timeoutMs: 120_000,
        intervalMs: 200,
      }),
      exited,
    ]);
    exited.catch(() => undefined);
    void proc.exited.then(async (exit) => {
      if (hub.expectExit || this.stopping || hub.proc !== proc) return;
      // The thrown error's own line (`error: …`, `TypeError: …`), not the stack under it.
      const tail = readFileSync(logFile, 'utf8')
        .split('\n')
        .filter((l) => /^\w*(error|Error):/.test(l));
      this.hubCrashes.push({
        hub: hub.index,
        exit,
        cause: (tail[tail.length - 1] ?? '').trim().slice(0, 200),
      });
      this.progress(`  hub ${hub.index} (pid ${proc.pid}) exited on its own (${exit}); restarting it`);
      // Like a pod in CrashLoopBackOff: try again, waiting 1 s doubling to 10 s, until it stays up.
      for (let delay = 1_000; !this.stopping; delay = Math.min(delay * 2, 10_000)) {
        await new Promise((resolve) => setTimeout(resolve, delay));
        if (this.stopping) return;
        try {
          await this.startHub(hub);
          this.progress(`  hub ${hub.index} is back as pid ${hub.proc?.pid}`);
          return;
        } catch (e) {
          this.progress(
            `  hub ${hub.index} restart failed (${(e as Error).message.split(';')[0]}); retrying`,
          );
        }
      }
    });
  }

  /** kill -9 of one hub process, as a crash or an OOM kill would. */
  async killHub(hub: HubProcess): Promise<void> {
    hub.expectExit = true;
    if (hub.proc) await this.supervisor.kill(hub.proc);
  }

  /** Hubs whose process runs. */
  liveHubs(): HubProcess[] {
    return this.hubs.filter(
      (h) => h.proc && h.proc.child.exitCode === null && h.proc.child.signalCode === null,
    );
  }

  /** A client on a hub that runs (the admin API is on every replica). */
  liveApi(): HubClient {
    const hub = this.liveHubs()[0];
    if (!hub) throw new Error('no hub process runs');
    return new HubClient(hub.url);
  }

  async startAgent(i: number, bootstrapToken?: string): Promise<void> {
    const entry = this.agents[i];
    if (!entry) throw new Error(`no cluster ${i}`);
    entry.agent = await startAgent(
      {
        hubUrl: this.proxy.url,
        clusterName: entry.cluster,
        ...(bootstrapToken && { bootstrapToken }),
        stateDir: entry.stateDir,
        resyncSeconds: 3600,
        logLevel: 'warn',
      },
      {
        logger: this.agentLog,
        kubeConfig: entry.kubeConfig,
        // Shorter than the 60 s default cap, so that a 30 s outage costs seconds, not a minute, after it.
        hubBackoff: { initialMs: 250, maxMs: 5_000 },
      },
    );
  }

  /** Stops cluster i's agent, wherever it runs (a process with SIGTERM: a clean stop). */
  async stopAgent(i: number): Promise<void> {
    const entry = this.agents[i];
    await entry?.agent?.stop();
    if (entry?.proc) await this.supervisor.stop(entry.proc);
    if (entry) Object.assign(entry, { agent: undefined, proc: undefined });
  }

  /**
   * Runs cluster i's agent as its own process, as a Deployment runs it, from the same state dir (so
   * it resumes with its credential, cached assignments, bundles and queued reports).
   */
  startAgentProcess(i: number): SupervisedProcess {
    const entry = this.agents[i];
    if (!entry) throw new Error(`no cluster ${i}`);
    if (entry.agent || entry.proc) throw new Error(`cluster ${entry.cluster}'s agent already runs`);
    if (!entry.kubeconfigPath) throw new Error(`cluster ${entry.cluster} has no kubeconfig file`);
    entry.proc = this.supervisor.spawn(`agent-${entry.cluster}`, process.execPath, [AGENT_MAIN], {
      env: {
        FLOTILLA_HUB_URL: this.proxy.url,
        FLOTILLA_CLUSTER_NAME: entry.cluster,
        KUBECONFIG: entry.kubeconfigPath,
        FLOTILLA_STATE_DIR: entry.stateDir,
        FLOTILLA_RESYNC_SECONDS: '3600',
        FLOTILLA_LOG_LEVEL: 'warn',
      },
      logFile: join(this.workDir, `agent-${entry.cluster}.log`),
    });
    return entry.proc;
  }

  /** kill -9 of cluster i's agent process: no stop, no flush, whatever it was doing is cut short. */
  async killAgentProcess(i: number): Promise<number | string> {
    const entry = this.agents[i];
    if (!entry?.proc) throw new Error(`cluster ${i}'s agent does not run as a process`);
    const proc = entry.proc;
    entry.proc = undefined;
    await this.supervisor.kill(proc);
    return proc.exited;
  }

  /** Registers the repository and the clusters × app directories appset; waits for the cold fleet. */
  async deployApps(timeoutMs: number): Promise<void> {
    const repo = await this.api.request<{ id: string }>('POST', '/api/v1/repositories', {
      url: this.repoUrl,
    });
    this.repositoryId = repo.id;
    await this.api.createAppSet(fleetAppSet('chaos', this.repoUrl));
    await this.waitConverged('r0', this.head(), timeoutMs);
  }

  head(): string {
    return this.commits[this.commits.length - 1] as string;
  }

  /** Commits every app at `release` and tells a live hub about it with a signed push webhook. */
  async commitAndPush(release: string): Promise<string> {
    const sha = await this.repo.commitRelease(release);
    this.commits.push(sha);
    await this.pushWebhook(sha);
    return sha;
  }

  /** A GitHub push delivery for the repository, signed with the hub's secret; 202 expected. */
  async pushWebhook(after: string): Promise<void> {
    const body = JSON.stringify({
      ref: 'refs/heads/main',
      before: '0'.repeat(40),
      after,
      repository: { clone_url: this.repoUrl, html_url: this.repoUrl.replace(/\.git$/, '') },
    });
    await waitFor(
      'a hub to accept the push webhook',
      async () => {
        const res = await fetch(new URL(WEBHOOK_PATH, this.liveApi().baseUrl), {
          method: 'POST',
          headers: {
            'content-type': 'application/json',
            'x-github-event': 'push',
            'x-github-delivery': randomBytes(8).toString('hex'),
            'x-hub-signature-256': `sha256=${createHmac('sha256', this.webhookSecret).update(body).digest('hex')}`,
          },
          body,
        });
        if (res.status !== 202) throw new Error(`webhook answered ${res.status}: ${await res.text()}`);
        return true;
      },
      { timeoutMs: 60_000, intervalMs: 500 },
    );
  }

  /** Clusters whose every app's ConfigMap carries `release`. */
  clustersOn(release: string): number {
    return this.releases.filter((m) => {
      for (let a = 0; a < this.shape.apps; a++) if (m.get(appName(a)) !== release) return false;
      return true;
    }).length;
  }

  /**
   * A person's `kubectl edit` of one key of app `app`'s ConfigMap on cluster `i` (never `release`,
   * which the convergence checks read): drift its agent heals, and so a drift report it must deliver.
   */
  async editConfigMap(i: number, app: number, key: string, value: string): Promise<void> {
    const entry = this.agents[i];
    if (!entry) throw new Error(`no cluster ${i}`);
    if (key === 'release') throw new Error('editConfigMap leaves data.release to the commits');
    await KubernetesObjectApi.makeApiClient(entry.kubeConfig).patch(
      {
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: { name: 'settings-0', namespace: appName(app) },
        data: { [key]: value },
      },
      undefined,
      undefined,
      'kubectl-edit',
      undefined,
      PatchStrategy.MergePatch,
    );
  }

  /** The credential each agent holds on its disk now (cluster name → credential). */
  storedCredentials(): Map<string, string> {
    const out = new Map<string, string>();
    for (const a of this.agents) {
      const file = join(a.stateDir, 'credential.json');
      if (existsSync(file))
        out.set(a.cluster, (JSON.parse(readFileSync(file, 'utf8')) as { credential: string }).credential);
    }
    return out;
  }

  /** Report batches still on agents' disks, not yet acknowledged by a hub. */
  queuedBatches(): number {
    let n = 0;
    for (const a of this.agents) {
      const dir = join(a.stateDir, 'reports');
      if (existsSync(dir)) n += readdirSync(dir).filter((f) => f.endsWith('.json')).length;
    }
    return n;
  }

  /**
   * Waits until every cluster carries `release` on every app, the hub reports every target Synced at
   * `sha`, and every report an agent queued has been delivered. Progress every 10 s.
   */
  async waitConverged(release: string, sha: string, timeoutMs: number): Promise<number> {
    const t0 = performance.now();
    const expected = this.clusterCount * this.shape.apps;
    let lastLine = 0;
    let regressed: string | undefined;
    await waitFor(
      `every cluster on ${release} and the hub Synced at ${sha.slice(0, 8)}`,
      async () => {
        const onClusters = this.clustersOn(release);
        let synced = 0;
        try {
          const targets = await this.liveApi().targets();
          synced = targets.filter((t) => t.syncStatus === 'Synced' && t.desiredRevision === sha).length;
          regressed = this.regression(sha, targets);
          if (regressed) return true;
        } catch {
          // a hub restarting or its database away: try again
        }
        const queued = this.queuedBatches();
        if (performance.now() - lastLine > 10_000) {
          lastLine = performance.now();
          this.progress(
            `  ${onClusters}/${this.clusterCount} clusters on ${release}, ${synced}/${expected} targets Synced, ${queued} report batches queued`,
          );
        }
        return onClusters === this.clusterCount && synced === expected && queued === 0 ? true : undefined;
      },
      { timeoutMs, intervalMs: 250 },
    );
    if (regressed) throw new DesiredStateRegression(regressed);
    return performance.now() - t0;
  }

  /**
   * Desired state must never go back: while `sha` rolls out, every target is at it or at the commit
   * before it. A target at an older commit means some hub expanded from a stale view of Git.
   */
  regression(sha: string, targets: { name: string; desiredRevision: string | null }[]): string | undefined {
    const floor = this.commits.indexOf(sha) - 1;
    const behind = targets.filter((t) => {
      const i = this.commits.indexOf(t.desiredRevision ?? '');
      return i >= 0 && i < floor;
    });
    if (!behind.length || !behind[0]) return undefined;
    const at = this.commits.indexOf(behind[0].desiredRevision ?? '');
    return (
      `desired state went backwards: ${behind.length} targets (${behind[0].name}, …) want commit #${at} ` +
      `(${(behind[0].desiredRevision ?? '').slice(0, 8)}) although #${floor} was already rolled out and #${floor + 1} committed`
    );
  }

  /** Polls the hub's targets for a desired-state regression (see {@link regression}). */
  async checkRegression(sha: string): Promise<void> {
    const found = this.regression(sha, await this.liveApi().targets());
    if (found) throw new DesiredStateRegression(found);
  }

  /** Runs `fn` with a client on the fleet's database. */
  async sql<T>(fn: (c: pg.Client) => Promise<T>): Promise<T> {
    const c = new pg.Client({ connectionString: this.postgres.url });
    await c.connect();
    try {
      return await fn(c);
    } finally {
      await c.end();
    }
  }

  /** Compares every report id the agents posted with the hub's rows: stored once, history and audit once. */
  async checkLedger(): Promise<LedgerCheck> {
    const sent = [...this.proxy.sent.values()];
    const rows = await this.sql(async (c) => ({
      processed: (await c.query<{ id: string }>('SELECT id FROM "ProcessedReport"')).rows.map((r) => r.id),
      history: (await c.query<{ id: string }>('SELECT "agentReportId" AS id FROM "SyncRun"')).rows.map(
        (r) => r.id,
      ),
      audit: (
        await c.query<{ id: string; n: string }>(
          `SELECT details->>'reportId' AS id, count(*)::text AS n FROM "AuditEvent"
           WHERE details ? 'reportId' GROUP BY 1`,
        )
      ).rows,
      targets: new Set((await c.query<{ id: string }>('SELECT id FROM "Target"')).rows.map((r) => r.id)),
    }));
    const processed = new Set(rows.processed);
    const history = new Set(rows.history);
    const audited = new Map(rows.audit.map((r) => [r.id, Number(r.n)]));
    const sentIds = new Set(sent.map((r) => r.id));
    return {
      sent: sent.length,
      stored: processed.size,
      lost: sent.filter((r) => !processed.has(r.id)).map((r) => r.id),
      phantom: rows.processed.filter((id) => !sentIds.has(id)),
      missingHistory: sent
        .filter((r) => r.type === 'sync' && rows.targets.has(r.targetId) && !history.has(r.id))
        .map((r) => r.id),
      missingAudit: sent
        // Health and comparison reports are status, not events: they are stored, never audited.
        .filter(
          (r) =>
            (r.type === 'sync' || r.type === 'drift') && rows.targets.has(r.targetId) && !audited.has(r.id),
        )
        .map((r) => r.id),
      duplicateAudit: [...audited].filter(([, n]) => n > 1).map(([id]) => id),
      replayed: sent.filter((r) => r.posts > 1).length,
      queued: this.queuedBatches(),
    };
  }

  /** `appset.expanded` audit events that moved targets to `sha`: exactly one per commit, whatever the faults. */
  async expansionsTo(sha: string): Promise<number> {
    return this.sql(async (c) => {
      const r = await c.query<{ n: string }>(
        `SELECT count(*)::text AS n FROM "AuditEvent"
         WHERE action = 'appset.expanded' AND (details->'updated')::int > 0
           AND details->'targets'->0->>'revision' = $1`,
        [sha],
      );
      return Number(r.rows[0]?.n ?? 0);
    });
  }

  async stop(): Promise<void> {
    this.stopping = true;
    for (const w of this.watches) w.stop();
    await Promise.all(this.agents.map((a) => a.agent?.stop() ?? Promise.resolve()));
    await this.proxy?.stop();
    await this.sims?.stop();
    // The hubs first, then PostgreSQL with a fast shutdown: a smart one (SIGTERM) would wait for clients.
    for (const hub of this.hubs) if (hub.proc) await this.supervisor.stop(hub.proc);
    await this.postgres?.stopServer();
    await this.supervisor.stopAll();
    this.agentLog.flush();
    if (!process.env['CHAOS_KEEP_WORKDIR']) rmSync(this.workDir, { recursive: true, force: true });
  }
}
