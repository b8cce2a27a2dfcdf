import { mkdirSync } from 'node:fs';
import { PGlite } from '@electric-sql/pglite';
import { PrismaPg } from '@prisma/adapter-pg';
import { PrismaPGlite } from 'pglite-prisma-adapter';
import pg from 'pg';
import { Logger, type OnApplicationShutdown } from '@nestjs/common';
import type { DatabaseConfig } from '../config/hub-config.js';
import { PrismaClient } from '../generated/prisma/client.js';
import { applyMigrations, readMigrations } from './migrator.js';
import type { SqlRunner } from './sql-runner.js';

/** How long a query waits for a connection when PostgreSQL does not answer, before it fails. */
const CONNECT_TIMEOUT_MS = 10_000;

const connectionLogger = new Logger('Database');

/** A dropped connection is expected during an outage: logged, never fatal. */
function logConnectionLoss(where: string, e: Error): void {
  connectionLogger.warn(`${where}: connection lost: ${e.message}`);
}

/**
 * The hub's database: a Prisma client plus a raw SQL runner, on PostgreSQL (DATABASE_URL) or on an
 * embedded PGlite database. Opening it applies pending migrations.
 */
export class Database implements OnApplicationShutdown {
  private constructor(
    readonly prisma: PrismaClient,
    readonly sql: SqlRunner,
    private readonly closeAll: () => Promise<void>,
  ) {}

  static async open(config: DatabaseConfig): Promise<Database> {
    if (config.kind === 'postgres') {
      // Pools, not a plain client: a pooled connection PostgreSQL drops (restart, failover, an admin's
      // pg_terminate_backend) is discarded and the next query opens a new one. An 'error' event with
      // no listener would end the process, so both pools log it and carry on; while PostgreSQL is
      // away queries fail (readiness says so, jobs fail and are retried) and nothing else stops.
      const pool = new pg.Pool({
        connectionString: config.url,
        // Raw SQL: migrations, readiness, and the agent gateway's hot reads (assignments, bundle
        // batches, lastSeenAt), which skip Prisma's per-row mapping; as many as Prisma's own pool.
        max: 10,
        connectionTimeoutMillis: CONNECT_TIMEOUT_MS,
      });
      pool.on('error', (e) => logConnectionLoss('sql pool', e));
      await Database.migrate(pool);
      const sql: SqlRunner = {
        exec: async (text) => {
          await pool.query(text);
        },
        query: async <T>(text: string, params: unknown[] = []) =>
          (await pool.query(text, params)).rows as T[],
      };
      const prisma = new PrismaClient({
        adapter: new PrismaPg(
          { connectionString: config.url, connectionTimeoutMillis: CONNECT_TIMEOUT_MS },
          {
            onPoolError: (e) => logConnectionLoss('prisma pool', e),
            onConnectionError: (e) => logConnectionLoss('prisma transaction', e),
          },
        ),
      });
      return new Database(prisma, sql, async () => {
        await prisma.$disconnect();
        await pool.end();
      });
    }
    if (config.dir) mkdirSync(config.dir, { recursive: true });
    const lite = config.dir ? new PGlite(config.dir) : new PGlite();
    await lite.waitReady;
    return Database.fromPglite(lite, async () => lite.close());
  }

  /**
   * Migrations need one session: the advisory lock and each migration's BEGIN … COMMIT live on it.
   * The connection is closed afterwards rather than pooled, so a lock left behind by a failure can
   * never travel with it.
   */
  private static async migrate(pool: pg.Pool): Promise<void> {
    const session = await pool.connect();
    try {
      const runner: SqlRunner = {
        exec: async (text) => {
          await session.query(text);
        },
        query: async <T>(text: string, params: unknown[] = []) =>
          (await session.query(text, params)).rows as T[],
      };
      await applyMigrations(runner, await readMigrations(), { advisoryLock: true });
    } finally {
      session.release(true);
    }
  }

  /** On an existing PGlite instance (tests use an in-memory one). */
  static async fromPglite(lite: PGlite, close: () => Promise<void> = async () => {}): Promise<Database> {
    const sql: SqlRunner = {
      exec: async (text) => {
        await lite.exec(text);
      },
      query: async <T>(text: string, params: unknown[] = []) => (await lite.query<T>(text, params)).rows,
    };
    // One process owns an embedded database, so there is nobody to take turns with.
    await applyMigrations(sql, await readMigrations(), { advisoryLock: false });
    const prisma = new PrismaClient({ adapter: new PrismaPGlite(lite) });
    return new Database(prisma, sql, async () => {
      await prisma.$disconnect();
      await close();
    });
  }

  async ping(): Promise<void> {
    await this.sql.query('SELECT 1');
  }

  private closing: Promise<void> | undefined;

  async close(): Promise<void> {
    this.closing ??= this.closeAll();
    await this.closing;
  }

  /** Nest calls this last, after the workers (closed in onModuleDestroy) have stopped. */
  async onApplicationShutdown(): Promise<void> {
    await this.close();
  }
}
