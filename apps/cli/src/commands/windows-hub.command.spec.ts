import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { runInProcess } from '../testing/run-in-process.js';
import { run } from './windows.command.js';

// Against a real hub: test/e2e/new-user-path.spec.ts and apps/hub/src/projects/projects-cli.integration.spec.ts.

describe('flotilla windows create|update|delete|calendar usage', () => {
  const dir = mkdtempSync(join(tmpdir(), 'flotilla-windows-hub-'));
  const file = join(dir, 'freeze.yaml');
  writeFileSync(file, 'name: other\nkind: deny\nschedule: "0 1 * * *"\nduration: 1h\n');
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it.each([
    [['create'], 'missing NAME; usage: flotilla windows create NAME'],
    [
      ['create', 'freeze', '-f', file, '--kind', 'deny'],
      'give the window in a file (-f) or with flags, not both',
    ],
    [['create', 'freeze', '-f', file], `the file names the window "other", not 'freeze'`],
    [['update', 'freeze'], 'nothing to change: give the fields to change as flags, or -f FILE'],
    [
      ['list', '--kind', 'deny'],
      "-f and the window flags apply to 'windows create' and 'windows update' only",
    ],
    [['show', 'freeze', '--days', '3'], "--since and --days apply to 'windows calendar' only"],
    [['delete'], 'missing NAME; usage: flotilla windows delete NAME'],
  ])('%j is a usage error (exit 2) before the hub is asked', async (argv, message) => {
    const r = await runInProcess(run, [...argv, '--hub', 'http://127.0.0.1:9']);
    expect(r.code).toBe(2);
    expect(r.out).toBe('');
    expect(r.err).toContain(`flotilla windows: ${message}`);
  });
});
