import { rmSync } from 'node:fs';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createHmac, randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import pg from 'pg';
import {
  ensureRedis,
  freePort,
  HubClient,
  ProcessSupervisor,
  REPO_ROOT,
  startGitDaemon,
  waitFor,
  type SupervisedProcess,
  deleteRedisKeys,
} from '@flotilla/cli/fleet';
import { AppRepo, type AppShape } from './app-repo.js';
import { cpuProfileArgs } from './cpu-profile.js';
import { onStop } from './cleanup.js';

export const ADMIN_DATABASE_URL =
  process.env['BENCH_DATABASE_URL'] ??
  process.env['TEST_DATABASE_URL'] ??
  'postgresql://postgres@127.0.0.1:5432/postgres';
const REDIS_URL = process.env['BENCH_REDIS_URL'] ?? 'redis://127.0.0.1:6379';

/**
 * What a hub-backed benchmark runs on: a fresh PostgreSQL database, a Redis key prefix (a private
 * redis-server when none answers), a Git repository of apps served by `git daemon`, and the real
 * hub as its own process. `stop()` kills every process by PID, drops the database, deletes the
 * prefix and removes the temp dir.
 */
export class HubStack {
  readonly supervisor = new ProcessSupervisor();
  hub!: SupervisedProcess;
  api!: HubClient;
  hubUrl = '';
  repo!: AppRepo;
  repoUrl = '';
  databaseUrl = '';
  redisUrl = '';
  /** A private redis-server stops with the stack and keeps nothing on disk: there are no keys to sweep. */
  private redisIsPrivate = false;
  readonly redisPrefix = `flotilla-bench-${randomBytes(4).toString('hex')}`;
  /** Signs the push webhooks `pushWebhook` sends. */
  readonly webhookSecret = randomBytes(16).toString('hex');
  private dbName = '';
  private forget: (() => void) | undefined;

  private constructor(readonly workDir: string) {}

  /**
   * `privateRedis`: run on a redis-server of its own instead of the shared one, so that Redis load
   * (`INFO commandstats`) counts this hub's commands only. `cpuList` (e.g. `0`): the hub process
   * runs confined to these cores (`taskset -c`), apart from the load the bench puts on it.
   */
  static async start(
    shape: AppShape,
    progress: (line: string) => void,
    opts: { privateRedis?: boolean; cpuList?: string } = {},
  ): Promise<HubStack> {
    const stack = new HubStack(await mkdtemp(join(tmpdir(), 'flotilla-bench-')));
    stack.forget = onStop(() => stack.stop());
    try {
      await stack.boot(shape, progress, opts.privateRedis ?? false, opts.cpuList);
    } catch (err) {
      await stack.stop();
      throw err;
    }
    return stack;
  }

  private async boot(
    shape: AppShape,
    progress: (line: string) => void,
    privateRedis: boolean,
    cpuList: string | undefined,
  ): Promise<void> {
    this.dbName = `flotilla_bench_${Date.now().toString(36)}_${randomBytes(3).toString('hex')}`;
    await withAdmin((c) => c.query(`CREATE DATABASE "${this.dbName}"`));
    const url = new URL(ADMIN_DATABASE_URL);
    url.pathname = `/${this.dbName}`;
    this.databaseUrl = url.toString();

    // A free port answers nothing, so ensureRedis starts a private redis-server.
    const redis = await ensureRedis(
      privateRedis ? `redis://127.0.0.1:${await freePort()}` : REDIS_URL,
      this.supervisor,
    );
    this.redisUrl = redis.url;
    this.redisIsPrivate = redis.started;

    this.repo = await AppRepo.create(join(this.workDir, 'git', 'fleet.git'), shape);
    const daemon = await startGitDaemon(join(this.workDir, 'git'), this.supervisor);
    this.repoUrl = daemon.url('fleet.git');

    const port = await freePort();
    this.hubUrl = `http://127.0.0.1:${port}`;
    this.api = new HubClient(this.hubUrl);
    const hubArgs = [...cpuProfileArgs(), join(REPO_ROOT, 'apps/hub/dist/main.js')];
    // `taskset` execs the hub in its own place (same PID), confined to the cores listed.
    this.hub = this.supervisor.spawn(
      'hub',
      cpuList === undefined ? process.execPath : 'taskset',
      cpuList === undefined ? hubArgs : ['-c', cpuList, process.execPath, ...hubArgs],
      {
        env: {
          HOST: '127.0.0.1',
          PORT: String(port),
          DATABASE_URL: this.databaseUrl,
          REDIS_URL: this.redisUrl,
          REDIS_PREFIX: this.redisPrefix,
          FLOTILLA_DATA_DIR: join(this.workDir, 'hub'),
          // Changes arrive through an explicit refresh, so a poll never lands inside a measurement.
          SOURCE_POLL_INTERVAL_SECONDS: '3600',
          FLOTILLA_WEBHOOK_SECRET: this.webhookSecret,
          LOG_LEVEL: 'warn',
          FLOTILLA_DEV_MODE: '1',
        },
        logFile: join(this.workDir, 'hub.log'),
      },
    );
    const exited = this.hub.exited.then((code) => {
      throw new Error(`the hub exited (${code}) before it was ready`);
    });
    await Promise.race([
      waitFor('the hub to be ready', async () => ((await this.api.ready()) ? true : undefined), {
        timeoutMs: 90_000,
      }),
      exited,
    ]);
    exited.catch(() => undefined);
    progress(`hub ready at ${this.hubUrl} (pid ${this.hub.pid}), database ${this.dbName}`);
  }

  /** Registers the repository and waits until the hub has fetched it. */
  async addRepository(): Promise<string> {
    const repo = await this.api.request<{ id: string }>('POST', '/api/v1/repositories', {
      url: this.repoUrl,
    });
    await waitFor(
      'the hub to fetch the repository',
      async () => {
        const r = await this.api.request<{ status: string; error?: string | null }>(
          'GET',
          `/api/v1/repositories/${repo.id}`,
        );
        if (r.status === 'Error') throw new Error(`repository fetch failed: ${r.error ?? ''}`);
        return r.status === 'Ready' ? true : undefined;
      },
      { timeoutMs: 60_000, intervalMs: 100 },
    );
    return repo.id;
  }

  /** Tells the hub about a commit as a Git host would: a signed GitHub push webhook (202 expected). */
  async pushWebhook(after: string): Promise<void> {
    const body = JSON.stringify({
      ref: 'refs/heads/main',
      before: '0'.repeat(40),
      after,
      repository: { clone_url: this.repoUrl, html_url: this.repoUrl.replace(/\.git$/, '') },
    });
    const res = await fetch(new URL('/api/v1/webhooks/git', this.hubUrl), {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'x-github-event': 'push',
        'x-github-delivery': randomBytes(8).toString('hex'),
        'x-hub-signature-256': `sha256=${createHmac('sha256', this.webhookSecret).update(body).digest('hex')}`,
      },
      body,
    });
    if (res.status !== 202) throw new Error(`the push webhook answered ${res.status}: ${await res.text()}`);
  }

  /**
   * Redis commands executed so far (`INFO commandstats`, every command summed but `INFO` itself,
   * which only this probe and client start-ups send).
   */
  async redisCommands(): Promise<number> {
    const client = new Redis(this.redisUrl, { maxRetriesPerRequest: 1 });
    try {
      let calls = 0;
      for (const m of (await client.info('commandstats')).matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm))
        if (m[1] !== 'info') calls += Number(m[2]);
      return calls;
    } finally {
      client.disconnect();
    }
  }

  /** One unlabelled sample of the hub's Prometheus metrics (`GET /metrics`); undefined when absent. */
  async hubMetric(name: string): Promise<number | undefined> {
    const text = await (await fetch(new URL('/metrics', this.hubUrl))).text();
    const line = text.split('\n').find((l) => l.startsWith(`${name} `));
    return line === undefined ? undefined : Number(line.slice(name.length + 1));
  }

  /** Committed transactions of the bench database so far (`pg_stat_database.xact_commit`). */
  async pgTransactions(): Promise<number> {
    return withAdmin(async (c) => {
      const r = await c.query<{ n: string }>(
        'SELECT xact_commit::text AS n FROM pg_stat_database WHERE datname = $1',
        [this.dbName],
      );
      return Number(r.rows[0]?.n ?? 0);
    });
  }

  /** A plain PostgreSQL client on the bench database (for counts and the bare-insert floor). */
  async sql<T>(fn: (c: pg.Client) => Promise<T>): Promise<T> {
    const c = new pg.Client({ connectionString: this.databaseUrl });
    await c.connect();
    try {
      return await fn(c);
    } finally {
      await c.end();
    }
  }

  async stop(): Promise<void> {
    this.forget?.();
    await this.supervisor.stopAll();
    if (this.dbName) {
      await withAdmin((c) => c.query(`DROP DATABASE IF EXISTS "${this.dbName}" WITH (FORCE)`)).catch(
        () => undefined,
      );
    }
    if (this.redisUrl && !this.redisIsPrivate)
      await deleteRedisKeys(this.redisUrl, this.redisPrefix).catch(() => undefined);
    rmSync(this.workDir, { recursive: true, force: true });
  }
}

async function withAdmin<T>(fn: (c: pg.Client) => Promise<T>): Promise<T> {
  const c = new pg.Client({ connectionString: ADMIN_DATABASE_URL });
  await c.connect();
  try {
    return await fn(c);
  } finally {
    await c.end();
  }
}
