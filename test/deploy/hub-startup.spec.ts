import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { afterAll, describe, expect, it } from 'vitest';
import {
  createTestPostgres,
  deleteRedisPrefix,
  testRedisUrl,
  uniqueRedisPrefix,
  type TestPostgres,
} from '@flotilla/hub/testing';
import { REPO_ROOT } from '@flotilla/cli/fleet';
import { execProcess } from '../support/exec-process.js';

// The built hub, as the image runs it (npm test builds it first).
const HUB_MAIN = join(REPO_ROOT, 'apps/hub/dist/main.js');

/** Every variable that makes a hub safe, unset (an empty value counts as unset), whatever the runner has. */
const UNSAFE_ENV = {
  FLOTILLA_ADMIN_TOKEN: '',
  FLOTILLA_OIDC_ISSUER: '',
  FLOTILLA_OIDC_AUDIENCE: '',
  FLOTILLA_SECRETS_KEY: '',
  FLOTILLA_DEV_MODE: '',
};

describe('hub start-up safety, as the hub process starts', () => {
  const work = mkdtempSync(join(tmpdir(), 'flotilla-hub-startup-'));
  let postgres: TestPostgres | undefined;
  const prefix = uniqueRedisPrefix('startup');

  afterAll(async () => {
    await postgres?.drop();
    await deleteRedisPrefix(prefix);
    rmSync(work, { recursive: true, force: true });
  });

  it('refuses to start an open hub without a secrets key, also in production, with one line naming the variables', async () => {
    const outcome = await execProcess(process.execPath, [HUB_MAIN], {
      ...UNSAFE_ENV,
      NODE_ENV: 'production',
      HOST: '127.0.0.1',
      PORT: '0',
      FLOTILLA_DATA_DIR: join(work, 'refused'),
    });
    expect(outcome.code).toBe(2);
    expect(outcome.stdout).toBe('');
    expect(outcome.stderr).toBe(
      'flotilla hub: refusing to start: set FLOTILLA_ADMIN_TOKEN or FLOTILLA_OIDC_ISSUER (without it anyone who reaches the hub is admin) and FLOTILLA_SECRETS_KEY (without it repository credentials cannot be stored), or FLOTILLA_DEV_MODE=1 for a development hub\n',
    );
  });

  it('in development mode starts, warns before anything else, says so on /readyz, and stops cleanly', async () => {
    postgres = await createTestPostgres();
    const child = spawn(process.execPath, [HUB_MAIN], {
      env: {
        ...process.env,
        ...UNSAFE_ENV,
        FLOTILLA_DEV_MODE: '1',
        HOST: '127.0.0.1',
        PORT: '0',
        DATABASE_URL: postgres.url,
        REDIS_URL: testRedisUrl(),
        REDIS_PREFIX: prefix,
        FLOTILLA_DATA_DIR: join(work, 'dev'),
        SOURCE_POLL_INTERVAL_SECONDS: '3600',
        LOG_LEVEL: 'warn',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    try {
      // The one stdout line main.ts prints once it listens names the URL; a hub that exits first fails here.
      const listening = await new Promise<{ url: string }>((resolve, reject) => {
        const lines = createInterface({ input: child.stdout });
        lines.on('line', (line) => {
          if (line.includes('"flotilla hub listening"')) resolve(JSON.parse(line) as { url: string });
        });
        void exited.then((code) => reject(new Error(`the hub exited (${code}) before listening: ${stderr}`)));
      });
      const warnings = stderr
        .split('\n')
        .filter((l) => l.startsWith('{'))
        .map((l) => JSON.parse(l) as { level: number; msg: string })
        .filter((l) => l.level === 40)
        .map((l) => l.msg);
      expect(warnings.slice(0, 3)).toEqual([
        'flotilla hub: DEVELOPMENT MODE (FLOTILLA_DEV_MODE=1): not for production',
        'flotilla hub: no FLOTILLA_ADMIN_TOKEN or OIDC: the API is open, anyone who reaches the hub is admin',
        'flotilla hub: no FLOTILLA_SECRETS_KEY: repository credentials cannot be stored',
      ]);

      const ready = (await (await fetch(`${listening.url}/readyz`)).json()) as Record<string, unknown>;
      expect(ready).toMatchObject({ status: 'ready', mode: 'development' });
      expect(ready['warnings']).toHaveLength(3);
    } finally {
      child.kill('SIGTERM');
    }
    expect(await exited).toBe(0);
  }, 60_000);
});
