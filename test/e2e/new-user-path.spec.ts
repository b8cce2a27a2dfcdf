import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { REPO_ROOT } from '@flotilla/cli/fleet';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ProcessOutcome } from '../support/exec-process.js';
import { createTestDatabase, TEST_REDIS_URL } from '../support/test-services.js';

const CLI_MAIN = join(REPO_ROOT, 'apps/cli/dist/main.js');

/**
 * A new user's first minutes (issue #21), with the built CLI as a person runs it: `flotilla demo`,
 * then the context it prints, and `targets`, `windows create`, `sync --wait` and `history --watch`
 * work with no FLOTILLA_* variable — only the config file the demo wrote in the user's home. The
 * demo's own infrastructure (a test database, the test Redis) is the only environment it gets.
 */
describe("a new user's path from the demo", () => {
  const home = mkdtempSync(join(tmpdir(), 'flotilla-new-user-'));
  let database: { url: string; drop: () => Promise<void> } | undefined;
  let demo: ChildProcess | undefined;
  let demoOut = '';

  /** The user's environment: their home, and none of the CLI's variables. */
  const userEnv = (): Record<string, string> => {
    const env: Record<string, string> = {};
    for (const [k, v] of Object.entries(process.env)) {
      if (v !== undefined && !k.startsWith('FLOTILLA_') && k !== 'XDG_CONFIG_HOME') env[k] = v;
    }
    return { ...env, HOME: home };
  };
  /** The built CLI in the user's environment alone (execProcess would add this process's). */
  const flotilla = (...args: string[]): Promise<ProcessOutcome> =>
    new Promise((resolve, reject) => {
      const child = spawn(process.execPath, [CLI_MAIN, ...args], {
        env: userEnv(),
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
      child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
      child.on('error', reject);
      child.on('close', (code) => resolve({ code: code ?? -1, stdout, stderr }));
    });

  beforeAll(async () => {
    database = await createTestDatabase('flotilla_new_user');
    demo = spawn(
      process.execPath,
      [CLI_MAIN, 'demo', '--clusters', '1', '--dir', join(home, 'demo'), '--timeout', '150'],
      {
        env: { ...userEnv(), DATABASE_URL: database.url, REDIS_URL: TEST_REDIS_URL },
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    // The demo prints the line to use its context once every target converged.
    await new Promise<void>((resolve, reject) => {
      const seen = (d: Buffer) => {
        demoOut += d.toString();
        if (demoOut.includes('context use flotilla-demo')) resolve();
      };
      demo?.stdout?.on('data', seen);
      demo?.stderr?.on('data', seen);
      demo?.once('exit', (code) => reject(new Error(`flotilla demo exited ${code}:\n${demoOut}`)));
    });
  }, 180_000);

  afterAll(async () => {
    if (demo?.exitCode === null) {
      const exited = new Promise((resolve) => demo?.once('exit', resolve));
      demo.kill('SIGINT');
      await exited;
    }
    await database?.drop();
    rmSync(home, { recursive: true, force: true });
  }, 60_000);

  it('targets, windows create, sync --wait and history --watch work with the printed context alone', async () => {
    const command = /npx flotilla (context use flotilla-demo)/.exec(demoOut)?.[1]?.split(' ');
    expect(command).toEqual(['context', 'use', 'flotilla-demo']);
    const used = await flotilla(...command!);
    expect(used.stderr).toBe('');
    expect(used.code).toBe(0);

    const targets = await flotilla('targets', '-o', 'json');
    expect(targets.stderr).toBe('');
    expect(targets.code).toBe(0);
    const names = (JSON.parse(targets.stdout) as { name: string }[]).map((t) => t.name);
    const guestbook = names.find((n) => n.endsWith('-guestbook'));
    expect(guestbook).toBeDefined();

    // A refused window names the flag typed, not the API's field; nothing is created.
    const refused = await flotilla(
      'windows',
      'create',
      'night-freeze',
      '--kind',
      'deny',
      '--schedule',
      '0 1 * * *',
      '--duration',
      '1h',
      '--time-zone',
      'Mars/Olympus',
    );
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(
      /^flotilla windows: POST .* → 400 invalid-time-zone: .*--time-zone: unknown time zone 'Mars\/Olympus'/,
    );
    expect(refused.stderr).toContain('(--time-zone; API field timeZone)');

    const created = await flotilla(
      'windows',
      'create',
      'night-freeze',
      '--kind',
      'deny',
      '--schedule',
      '0 1 * * *',
      '--duration',
      '1h',
      '--time-zone',
      'Europe/Paris',
      '--clusters',
      '*',
      '--manual-sync',
      '--reason',
      'no automated change at night',
    );
    expect(created.stderr).toBe('');
    expect(created.code).toBe(0);
    expect(created.stdout).toMatch(/^Created sync window night-freeze \(version 1\)\./);
    const listed = await flotilla('windows', 'list', '-o', 'json');
    expect(JSON.parse(listed.stdout)).toMatchObject([
      { name: 'night-freeze', kind: 'deny', timeZone: 'Europe/Paris', clusters: ['*'], manualSync: true },
    ]);

    // Manual syncs pass the window (--manual-sync); --wait follows the agent. Not a terminal:
    // stdout holds the result alone and nothing is written on stderr (no progress).
    const synced = await flotilla(
      'sync',
      guestbook!,
      '--reason',
      'first sync by hand',
      '--wait',
      '--timeout',
      '90',
    );
    expect(synced.stderr).toBe('');
    expect(synced.code).toBe(0);
    expect(synced.stdout).toMatch(/^State: +Succeeded$/m);

    const watched = await flotilla('history', '--watch', '--timeout', '3', '-o', 'json');
    expect(watched.stderr).toBe('');
    expect(watched.code).toBe(0);
    const first = JSON.parse(watched.stdout.split('\n')[0]!) as { target: string; trigger: string }[];
    expect(first.some((r) => r.target === guestbook && r.trigger === 'manual')).toBe(true);
  }, 180_000);
});
