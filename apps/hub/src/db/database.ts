import { mkdirSync } from 'node:fs';
import { PGlite } from '@electric-sql/pglite';
import { PrismaPg } from '@prisma/adapter-pg';
import { PrismaPGlite } from 'pglite-prisma-adapter';
import pg from 'pg';
import type { OnApplicationShutdown } from '@nestjs/common';
import type { DatabaseConfig } from '../config/hub-config.js';
import { PrismaClient } from '../generated/prisma/client.js';
import { applyMigrations, readMigrations } from './migrator.js';
import type { SqlRunner } from './sql-runner.js';

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
      const client = new pg.Client({ connectionString: config.url });
      await client.connect();
      const sql: SqlRunner = {
        exec: async (text) => {
          await client.query(text);
        },
        query: async <T>(text: string, params: unknown[] = []) =>
          (await client.query(text, params)).rows as T[],
      };
      await applyMigrations(sql, await readMigrations(), { advisoryLock: true });
      const prisma = new PrismaClient({ adapter: new PrismaPg({ connectionString: config.url }) });
      return new Database(prisma, sql, async () => {
        await prisma.$disconnect();
        await client.end();
      });
    }
    if (config.dir) mkdirSync(config.dir, { recursive: true });
    const lite = config.dir ? new PGlite(config.dir) : new PGlite();
    await lite.waitReady;
    return Database.fromPglite(lite, async () => lite.close());
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
