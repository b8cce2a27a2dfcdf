import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { appSetViewSchema } from '@flotilla/contract';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../fleet/free-port.js';
import { runInProcess } from '../testing/run-in-process.js';
import { headersOf, rowOf, startStandInHub, type StandInHub } from '../testing/stand-in-hub.js';
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
    [['list', '-f', 'x.yaml'], "-f applies to 'appsets apply' and 'appsets preview' only"],
    [['preview', 'web', '--wait'], "--wait and --timeout apply to 'appsets apply' only"],
    [['get', 'web', '--hard'], "--hard applies to 'appsets refresh' only"],
    [
      ['get', 'web', '--reason', 'x'],
      "--reason applies to 'appsets refresh' and 'appsets confirm-expansion' only",
    ],
    [['refresh', 'web', '--inputs-hash', 'h'], "--inputs-hash applies to 'appsets confirm-expansion' only"],
    [['refresh'], 'missing NAME; usage: flotilla appsets refresh NAME [--hard]'],
    [['preview'], 'missing NAME; usage: flotilla appsets preview NAME | -f FILE'],
    [
      ['preview', 'web', '-f', 'x.yaml'],
      "unexpected argument 'web'; usage: flotilla appsets preview -f FILE",
    ],
    [
      ['sync'],
      "unknown sub-command 'sync'; expected list, get, apply, delete, refresh, preview or confirm-expansion",
    ],
  ])('%j is a usage error (exit 2)', async (argv, message) => {
    const r = await runInProcess(run, argv);
    expect(r.code).toBe(2);
    expect(r.out).toBe('');
    expect(r.err).toContain(`flotilla appsets: ${message}`);
  });
});

describe('flotilla appsets -o wide against a stand-in hub', () => {
  const appSet = appSetViewSchema.parse({
    id: 'a1',
    name: 'web',
    apiVersion: 'flotilla.dev/v1alpha1',
    status: 'Ready',
    error: null,
    pendingExpansion: null,
    repoUrls: ['https://git.example/web.git'],
    project: 'payments',
    source: {
      managedBy: 'git',
      repo: 'https://git.example/fleet.git',
      file: 'appsets/web.yaml',
      commit: '0123456789abcdef0123456789abcdef01234567',
      author: 'ana',
    },
    targetCount: 2,
    lastExpandedAt: null,
    createdAt: '2026-12-01T00:00:00.000Z',
    updatedAt: '2026-12-01T00:00:00.000Z',
    document: { apiVersion: 'flotilla.dev/v1alpha1', kind: 'ApplicationSet', metadata: { name: 'web' } },
  });
  let hub: StandInHub;
  beforeAll(async () => {
    hub = await startStandInHub({ '/api/v1/appsets': [appSet] });
  });
  afterAll(() => hub.close());

  it('adds the project, the API version, when it changed and where it is managed', async () => {
    const table = await runInProcess(run, ['--hub', hub.url]);
    expect(table.code).toBe(0);
    expect(headersOf(table.out)).toEqual(['NAME', 'STATUS', 'TARGETS', 'EXPANDED', 'REPOSITORIES', 'ERROR']);
    const wide = await runInProcess(run, ['list', '--hub', hub.url, '-o', 'wide']);
    expect(wide.err).toBe('');
    expect(wide.code).toBe(0);
    const row = rowOf(wide.out);
    expect(headersOf(wide.out)).toEqual(Object.keys(row));
    expect(row).toEqual({
      NAME: 'web',
      PROJECT: 'payments',
      'API VERSION': 'flotilla.dev/v1alpha1',
      STATUS: 'Ready',
      TARGETS: '2',
      EXPANDED: '-',
      UPDATED: expect.stringMatching(/^\d+[smhd]$/) as string,
      'MANAGED BY': 'git appsets/web.yaml@0123456',
      REPOSITORIES: 'https://git.example/web.git',
      ERROR: '',
    });
  });
});
