import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../fleet/free-port.js';
import { runInProcess } from '../testing/run-in-process.js';
import { run } from './appsets.command.js';

let dir: string;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'flotilla-appsets-'));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('flotilla appsets without a hub', () => {
  it('reads the file before calling the hub: invalid YAML is a usage error naming file and line', async () => {
    const file = join(dir, 'bad.yaml');
    writeFileSync(file, 'apiVersion: flotilla.dev/v1alpha1\nkind: [ApplicationSet\n');
    const r = await runInProcess(run, ['apply', '-f', file, '--hub', 'http://127.0.0.1:9']);
    expect(r.code).toBe(2);
    expect(r.err).toMatch(
      new RegExp(`^flotilla appsets: ${file.replace(/[.\\/]/g, '\\$&')}:\\d+: invalid YAML`),
    );
  });

  it('exits 1 naming the URL when nothing listens there', async () => {
    const file = join(dir, 'ok.yaml');
    writeFileSync(file, 'apiVersion: flotilla.dev/v1alpha1\nkind: ApplicationSet\nmetadata: {name: x}\n');
    const hub = `http://127.0.0.1:${await freePort()}`;
    const r = await runInProcess(run, ['apply', '-f', file, '--hub', hub]);
    expect(r.code).toBe(1);
    expect(r.err).toMatch(
      new RegExp(`^flotilla appsets: cannot reach the hub at ${hub}: connect ECONNREFUSED`),
    );
  });

  it.each([
    [['apply'], 'apply needs -f FILE (a YAML or JSON ApplicationSet)'],
    [['apply', '-f', '/nonexistent/appset.yaml'], 'cannot read /nonexistent/appset.yaml: ENOENT'],
    [['apply', '-f', 'x.yaml', '--timeout', '0'], "--timeout must be a positive number of seconds, not '0'"],
    [['apply', 'extra', '-f', 'x.yaml'], "unexpected argument 'extra'"],
    [['delete'], 'missing NAME; usage: flotilla appsets delete NAME'],
    [['list', '-f', 'x.yaml'], "-f, --wait and --timeout apply to 'appsets apply' only"],
    [['get', 'web', '--hard'], "--hard and --reason apply to 'appsets refresh' only"],
    [['refresh'], 'missing NAME; usage: flotilla appsets refresh NAME [--hard]'],
    [['sync'], "unknown sub-command 'sync'; expected list, get, apply, delete or refresh"],
  ])('%j is a usage error (exit 2)', async (argv, message) => {
    const r = await runInProcess(run, argv);
    expect(r.code).toBe(2);
    expect(r.out).toBe('');
    expect(r.err).toContain(`flotilla appsets: ${message}`);
  });
});
