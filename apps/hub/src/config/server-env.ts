// Where this hub process listens, keeps its data and queues, what it runs, and how much it logs.
import { z } from 'zod';

const HUB_ROLE_NAMES = ['api', 'worker'] as const;
export type HubRole = (typeof HUB_ROLE_NAMES)[number];

export const serverEnv = z.object({
  HOST: z.string().min(1).default('127.0.0.1').describe('Address the HTTP server binds.'),
  PORT: z.coerce.number().int().min(0).max(65535).default(8080).describe('HTTP port (0 = any free port).'),
  DATABASE_URL: z
    .string()
    .regex(/^postgres(ql)?:\/\//, 'must be a postgres:// or postgresql:// URL')
    .optional()
    .describe('PostgreSQL URL. Unset: an embedded PGlite database under FLOTILLA_DATA_DIR/db.'),
  FLOTILLA_DATA_DIR: z
    .string()
    .min(1)
    .default('.flotilla')
    .describe('Where the hub keeps Git mirrors and the embedded database.'),
  REDIS_URL: z
    .string()
    .regex(/^rediss?:\/\//, 'must be a redis:// or rediss:// URL')
    .default('redis://127.0.0.1:6379')
    .describe('Redis for BullMQ queues and agent wake-ups.'),
  REDIS_PREFIX: z
    .string()
    .regex(/^[A-Za-z0-9_.-]+$/, 'letters, digits, "_", "." and "-" only')
    .default('flotilla')
    .describe('Key prefix, so several hubs or test runs can share one Redis.'),
  HUB_ROLES: z
    .string()
    .default('api,worker')
    .transform((v, ctx) => {
      const roles = v
        .split(',')
        .map((r) => r.trim())
        .filter(Boolean);
      const bad = roles.filter((r) => !(HUB_ROLE_NAMES as readonly string[]).includes(r));
      if (bad.length > 0 || roles.length === 0) {
        ctx.addIssue({
          code: 'custom',
          message: `expected a comma-separated list of api, worker; got "${v}"`,
        });
        return z.NEVER;
      }
      return roles as HubRole[];
    })
    .describe('What this process runs: api (HTTP), worker (BullMQ pipeline) or both.'),
});

/** The last variable of `.env.example`, kept apart so the generated file keeps its order. */
export const logEnv = z.object({
  LOG_LEVEL: z
    .enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'])
    .default('info')
    .describe('pino log level.'),
});

export type DatabaseConfig = { kind: 'postgres'; url: string } | { kind: 'pglite'; dir: string | null };

export interface ServerConfig {
  http: { host: string; port: number };
  database: DatabaseConfig;
  redis: { url: string; prefix: string };
  roles: { api: boolean; worker: boolean };
  dataDir: string;
  log: { level: z.output<typeof logEnv>['LOG_LEVEL'] };
}

export function serverConfig(e: z.output<typeof serverEnv> & z.output<typeof logEnv>): ServerConfig {
  return {
    http: { host: e.HOST, port: e.PORT },
    database: e.DATABASE_URL
      ? { kind: 'postgres', url: e.DATABASE_URL }
      : { kind: 'pglite', dir: `${e.FLOTILLA_DATA_DIR}/db` },
    redis: { url: e.REDIS_URL, prefix: e.REDIS_PREFIX },
    roles: { api: e.HUB_ROLES.includes('api'), worker: e.HUB_ROLES.includes('worker') },
    dataDir: e.FLOTILLA_DATA_DIR,
    log: { level: e.LOG_LEVEL },
  };
}
