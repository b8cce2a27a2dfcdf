import { chmodSync, chownSync, existsSync, mkdirSync, readdirSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import pg from 'pg';
import { Redis } from 'ioredis';
import {
  freePort,
  redisAnswers,
  waitFor,
  type ProcessSupervisor,
  type SupervisedProcess,
} from '@flotilla/cli/fleet';

/**
 * PostgreSQL refuses to run as root, and the chaos runs may be started by root in a container: then the
 * server runs as the `postgres` user through `setpriv`, which execs in place, so the PID we hold is the
 * postmaster's own.
 */
function asPostgresUser(): boolean {
  return process.getuid?.() === 0;
}

/**
 * A PostgreSQL server binary: from PATH, else from Debian's versioned directory
 * (`/usr/lib/postgresql/<major>/bin`, the newest), where `initdb` and `postgres` live off PATH.
 */
function postgresBinary(program: string): string {
  try {
    execFileSync(program, ['--version'], { stdio: 'ignore' });
    return program;
  } catch {
    const root = '/usr/lib/postgresql';
    const majors = existsSync(root)
      ? readdirSync(root)
          .filter((v) => existsSync(join(root, v, 'bin', program)))
          .sort((a, b) => Number(b) - Number(a))
      : [];
    if (!majors[0]) {
      throw new Error(
        `${program} is not on PATH nor under ${root}: install the PostgreSQL server (Debian/Ubuntu: apt-get install postgresql)`,
      );
    }
    return join(root, majors[0], 'bin', program);
  }
}

/** The command line running `program` as the user PostgreSQL accepts. */
function postgresCommand(program: string, args: string[]): [string, string[]] {
  const binary = postgresBinary(program);
  return asPostgresUser()
    ? ['setpriv', ['--reuid=postgres', '--regid=postgres', '--init-groups', '--', binary, ...args]]
    : [binary, args];
}

/**
 * A throwaway PostgreSQL cluster (initdb) in a temp dir on a free loopback port, so a run may stop
 * and start its database without touching the shared one. `stop()` is a fast shutdown (SIGINT):
 * clients are cut off at once, as in an outage.
 */
export class PrivatePostgres {
  private proc: SupervisedProcess | undefined;

  private constructor(
    private readonly dataDir: string,
    readonly port: number,
    private readonly supervisor: ProcessSupervisor,
  ) {}

  get url(): string {
    return `postgresql://postgres@127.0.0.1:${this.port}/flotilla`;
  }

  static async start(workDir: string, supervisor: ProcessSupervisor): Promise<PrivatePostgres> {
    const dataDir = join(workDir, 'pg');
    mkdirSync(dataDir, { recursive: true });
    if (asPostgresUser()) {
      // The postgres user must own the data dir and reach it through the temp dir.
      chmodSync(workDir, 0o755);
      const uid = Number(execFileSync('id', ['-u', 'postgres']).toString().trim());
      const gid = Number(execFileSync('id', ['-g', 'postgres']).toString().trim());
      chownSync(dataDir, uid, gid);
    }
    const [cmd, args] = postgresCommand('initdb', [
      '--pgdata',
      dataDir,
      '--username',
      'postgres',
      '--auth',
      'trust',
      '--no-sync',
      '--encoding',
      'UTF8',
    ]);
    execFileSync(cmd, args, { stdio: 'ignore' });
    const server = new PrivatePostgres(dataDir, await freePort(), supervisor);
    await server.startServer();
    const admin = new pg.Client({ connectionString: server.url.replace(/\/flotilla$/, '/postgres') });
    await admin.connect();
    try {
      await admin.query('CREATE DATABASE flotilla');
    } finally {
      await admin.end();
    }
    return server;
  }

  /** Starts the server (again) on the same port and data dir and waits until it accepts queries. */
  async startServer(): Promise<void> {
    const [cmd, args] = postgresCommand('postgres', [
      '-D',
      this.dataDir,
      '-p',
      String(this.port),
      '-k',
      this.dataDir,
      '-c',
      'listen_addresses=127.0.0.1',
      // Durability is not under test here (the process is stopped, not the machine), speed is.
      '-c',
      'fsync=off',
      '-c',
      'max_connections=200',
    ]);
    this.proc = this.supervisor.spawn('postgres', cmd, args, {
      logFile: join(this.dataDir, '..', 'postgres.log'),
    });
    const exited = this.proc.exited.then((code) => {
      throw new Error(`postgres exited (${code}) while starting; see postgres.log`);
    });
    await Promise.race([
      waitFor(
        'the private PostgreSQL to accept connections',
        async () => {
          const c = new pg.Client({ connectionString: this.url.replace(/\/flotilla$/, '/postgres') });
          try {
            await c.connect();
            await c.query('SELECT 1');
            return true;
          } finally {
            await c.end().catch(() => undefined);
          }
        },
        { timeoutMs: 30_000, intervalMs: 200 },
      ),
      exited,
    ]);
    exited.catch(() => undefined);
  }

  /** Fast shutdown (SIGINT): open connections are cut off, as in an outage. */
  async stopServer(): Promise<void> {
    const proc = this.proc;
    if (!proc || proc.child.exitCode !== null || proc.child.signalCode !== null) return;
    proc.child.kill('SIGINT');
    const timer = setTimeout(() => proc.child.kill('SIGKILL'), 15_000);
    await proc.exited;
    clearTimeout(timer);
  }

  /** `xact_commit` of the flotilla database: a measure of the database load a run caused. */
  async transactions(): Promise<number> {
    const c = new pg.Client({ connectionString: this.url });
    await c.connect();
    try {
      const r = await c.query<{ n: string }>(
        "SELECT xact_commit::text AS n FROM pg_stat_database WHERE datname = 'flotilla'",
      );
      return Number(r.rows[0]?.n ?? 0);
    } finally {
      await c.end();
    }
  }
}

/**
 * A private redis-server on a free loopback port with an append-only file in the temp dir, so a
 * restart keeps the queues (as a production Redis with AOF would) and the shared Redis is never touched.
 */
export class PrivateRedis {
  private proc: SupervisedProcess | undefined;

  private constructor(
    private readonly dir: string,
    readonly port: number,
    private readonly supervisor: ProcessSupervisor,
  ) {}

  get url(): string {
    return `redis://127.0.0.1:${this.port}`;
  }

  static async start(workDir: string, supervisor: ProcessSupervisor): Promise<PrivateRedis> {
    const dir = join(workDir, 'redis');
    mkdirSync(dir, { recursive: true });
    const redis = new PrivateRedis(dir, await freePort(), supervisor);
    await redis.startServer();
    return redis;
  }

  async startServer(): Promise<void> {
    this.proc = this.supervisor.spawn(
      'redis',
      'redis-server',
      [
        '--port',
        String(this.port),
        '--bind',
        '127.0.0.1',
        '--dir',
        this.dir,
        '--save',
        '',
        '--appendonly',
        'yes',
        '--appendfsync',
        'everysec',
      ],
      { logFile: join(this.dir, 'redis.log') },
    );
    await waitFor(
      'the private redis-server',
      async () => ((await redisAnswers(this.url)) ? true : undefined),
      {
        timeoutMs: 15_000,
        intervalMs: 100,
      },
    );
  }

  /** SIGTERM: redis-server flushes its append-only file and exits; clients see the connection drop. */
  async stopServer(): Promise<void> {
    if (this.proc) await this.supervisor.stop(this.proc, 10_000);
  }

  /** Calls per command since the server started (`INFO commandstats`). */
  async commandCalls(): Promise<number> {
    const client = new Redis(this.url, { maxRetriesPerRequest: 1 });
    try {
      const info = await client.info('commandstats');
      let calls = 0;
      for (const m of info.matchAll(/calls=(\d+)/g)) calls += Number(m[1]);
      return calls;
    } finally {
      client.disconnect();
    }
  }
}
