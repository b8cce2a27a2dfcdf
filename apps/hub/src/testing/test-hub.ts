import 'reflect-metadata';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { NestExpressApplication } from '@nestjs/platform-express';
import { loadHubConfig, type HubConfig } from '../config/hub-config.js';
import { createHubApp } from '../hub-app.js';
import type { AppModuleOptions } from '../app.module.js';
import { createTestPostgres, type TestPostgres } from './test-database.js';
import { deleteRedisPrefix, testRedisUrl, uniqueRedisPrefix } from './test-redis.js';

export interface TestHub {
  /** `http://127.0.0.1:<port>` */
  url: string;
  app: NestExpressApplication;
  config: HubConfig;
  postgres: TestPostgres;
  /** Stops the hub, drops its database, deletes its Redis keys and its data dir. */
  close(): Promise<void>;
}

/**
 * Boots the real hub (AppModule, both roles) in this process on 127.0.0.1 and a free port, on a
 * fresh PostgreSQL database and a unique Redis prefix. `env` adds or overrides hub variables.
 * It runs in development mode (no admin token or secrets key needed); pass FLOTILLA_DEV_MODE: '0'
 * with real ones to test a production hub.
 * `options` reach the app module (a stream for the request log).
 */
export async function startTestHub(
  env: Record<string, string> = {},
  options: AppModuleOptions = {},
): Promise<TestHub> {
  const postgres = await createTestPostgres();
  const dataDir = mkdtempSync(join(tmpdir(), 'flotilla-hub-'));
  const prefix = uniqueRedisPrefix('hub');
  const config = loadHubConfig({
    HOST: '127.0.0.1',
    PORT: '0',
    DATABASE_URL: postgres.url,
    REDIS_URL: testRedisUrl(),
    REDIS_PREFIX: prefix,
    FLOTILLA_DATA_DIR: dataDir,
    SOURCE_POLL_INTERVAL_SECONDS: '1',
    LOG_LEVEL: 'warn',
    FLOTILLA_DEV_MODE: '1',
    ...env,
  });
  let app: NestExpressApplication | undefined;
  try {
    app = await createHubApp(config, options);
    await app.listen(0, '127.0.0.1');
  } catch (e) {
    await app?.close();
    await postgres.drop();
    rmSync(dataDir, { recursive: true, force: true });
    throw e;
  }
  const address = app.getHttpServer().address();
  const port = typeof address === 'object' && address ? address.port : 0;
  const started = app;
  return {
    url: `http://127.0.0.1:${port}`,
    app: started,
    config,
    postgres,
    close: async () => {
      await started.close();
      await postgres.drop();
      await deleteRedisPrefix(prefix);
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/** An answer of the hub's JSON API: the status, the ETag and the parsed body (null when empty). */
export interface HubAnswer<T> {
  status: number;
  etag: string | null;
  body: T;
}

/**
 * A JSON caller for a test hub that may start later (`hub` is read at each call): the body, when
 * given, goes as JSON with `headers`; the answer is parsed whatever its status, so refusals can be
 * asserted.
 */
export function hubCaller(hub: () => Pick<TestHub, 'url'>) {
  return async <T = Record<string, unknown>>(
    method: string,
    path: string,
    body?: unknown,
    headers: Record<string, string> = {},
  ): Promise<HubAnswer<T>> => {
    const res = await fetch(`${hub().url}${path}`, {
      method,
      headers: { ...headers, ...(body !== undefined && { 'content-type': 'application/json' }) },
      ...(body !== undefined && { body: JSON.stringify(body) }),
    });
    const text = await res.text();
    return { status: res.status, etag: res.headers.get('etag'), body: (text ? JSON.parse(text) : null) as T };
  };
}
