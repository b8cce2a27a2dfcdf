import { projectViewSchema } from '@flotilla/contract';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runInProcess } from '../testing/run-in-process.js';
import { headersOf, rowOf, startStandInHub, type StandInHub } from '../testing/stand-in-hub.js';
import { run } from './projects.command.js';

// Against a real hub: apps/hub/src/projects/projects-cli.integration.spec.ts (apps do not import each other).

describe('flotilla projects usage', () => {
  it.each([
    [['frob'], "unknown sub-command 'frob'; expected list, get, create, update or delete"],
    [['get'], 'missing NAME; usage: flotilla projects get NAME'],
    [
      ['list', '--source-repos', '*'],
      "-f and the spec flags apply to 'projects create' and 'projects update' only",
    ],
    [['update', 'team-a'], 'nothing to change: give the fields to change as flags, or -f FILE'],
    [['delete', 'a', 'b'], "unexpected argument 'b'; usage: flotilla projects delete NAME"],
  ])('%j is a usage error (exit 2) before the hub is asked', async (argv, message) => {
    // Nothing listens there: a usage error never gets as far as asking.
    const r = await runInProcess(run, [...argv, '--hub', 'http://127.0.0.1:9']);
    expect(r.code).toBe(2);
    expect(r.out).toBe('');
    expect(r.err).toContain(`flotilla projects: ${message}`);
  });
});

describe('flotilla projects against a stand-in hub', () => {
  const project = projectViewSchema.parse({
    name: 'team-a',
    source: { managedBy: 'api' },
    createdAt: '2026-12-01T00:00:00.000Z',
    updatedAt: '2026-12-02T00:00:00.000Z',
    document: {
      apiVersion: 'flotilla.dev/v1alpha1',
      kind: 'Project',
      metadata: { name: 'team-a' },
      spec: {
        description: 'the team\nof A',
        sourceRepos: ['https://git.example.com/a/*'],
        destinations: [{ cluster: 'prod-*', namespace: 'a-*' }],
        syncWindows: ['night-freeze'],
      },
    },
  });
  let hub: StandInHub;
  beforeAll(async () => {
    hub = await startStandInHub({
      '/api/v1/projects': [project],
      '/api/v1/projects/team-a': project,
    });
  });
  afterAll(() => hub.close());

  it('lists projects; -o wide adds where each is managed, when it changed and its description', async () => {
    const table = await runInProcess(run, ['--hub', hub.url]);
    expect(table.err).toBe('');
    expect(rowOf(table.out)).toEqual({
      NAME: 'team-a',
      'SOURCE REPOS': 'https://git.example.com/a/*',
      DESTINATIONS: 'prod-*:a-*',
      'SYNC WINDOWS': 'night-freeze',
    });
    const wide = await runInProcess(run, ['list', '--hub', hub.url, '-o', 'wide']);
    expect(wide.code).toBe(0);
    expect(headersOf(wide.out)).toEqual([
      'NAME',
      'SOURCE REPOS',
      'DESTINATIONS',
      'SYNC WINDOWS',
      'MANAGED BY',
      'UPDATED',
      'DESCRIPTION',
    ]);
    expect(rowOf(wide.out)['DESCRIPTION']).toBe('the team of A');
  });

  it('refuses to create a project that exists, naming the command that changes it; nothing is sent', async () => {
    const r = await runInProcess(run, ['create', 'team-a', '--source-repos', '*', '--hub', hub.url]);
    expect(r.code).toBe(2);
    expect(r.err).toBe(
      "flotilla projects: project team-a exists: change it with 'flotilla projects update team-a'\n",
    );
    expect(hub.requests.filter((q) => !q.startsWith('GET '))).toEqual([]);
  });

  it('refuses a destination that is not CLUSTER:NAMESPACE before sending anything', async () => {
    const r = await runInProcess(run, ['update', 'team-a', '--destinations', 'prod-*', '--hub', hub.url]);
    expect(r.code).toBe(2);
    expect(r.err).toContain(
      "--destinations takes CLUSTER_GLOB:NAMESPACE_GLOB pairs (prod-*:web), not 'prod-*'",
    );
    expect(hub.requests.filter((q) => !q.startsWith('GET '))).toEqual([]);
  });
});
