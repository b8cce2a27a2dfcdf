import { fleetSourceDetailViewSchema, fleetSourceViewSchema } from '@flotilla/contract';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runInProcess } from '../testing/run-in-process.js';
import { headersOf, rowOf, startStandInHub, type StandInHub } from '../testing/stand-in-hub.js';
import { run } from './fleet-sources.command.js';

describe('flotilla fleet-sources -o wide against a stand-in hub', () => {
  const applied = '0123456789abcdef0123456789abcdef01234567';
  const seen = 'fedcba9876543210fedcba9876543210fedcba98';
  const source = fleetSourceViewSchema.parse({
    id: 'fs1',
    repoUrl: 'https://git.example/fleet.git',
    revision: 'main',
    path: '',
    status: 'Error',
    error: { code: 'invalid-fleet-config', message: 'appsets/web.yaml:\n  spec.template: required' },
    pendingDeletion: null,
    appliedCommit: applied,
    appliedAuthor: 'ana',
    appliedAt: null,
    seenCommit: seen,
    createdAt: '2026-12-01T00:00:00.000Z',
  });
  let hub: StandInHub;
  beforeAll(async () => {
    const detail = fleetSourceDetailViewSchema.parse({
      ...source,
      objects: [
        {
          kind: 'ApplicationSet',
          name: 'web',
          file: 'appsets/web.yaml',
          commit: applied,
          diverged: { at: '2026-12-01T10:30:00.000Z', by: 'user:ana', breakGlassId: 4 },
        },
      ],
    });
    hub = await startStandInHub({ '/api/v1/fleet-sources': [source], '/api/v1/fleet-sources/fs1': detail });
  });
  afterAll(() => hub.close());

  it('adds the whole applied commit and its author, the newest commit seen and the error', async () => {
    const table = await runInProcess(run, ['--hub', hub.url]);
    expect(table.code).toBe(0);
    expect(headersOf(table.out)).toEqual([
      'ID',
      'REPOSITORY',
      'REVISION',
      'PATH',
      'STATUS',
      'COMMIT',
      'APPLIED',
    ]);
    expect(rowOf(table.out)['COMMIT']).toBe(applied.slice(0, 12));
    const wide = await runInProcess(run, ['list', '--hub', hub.url, '-o', 'wide']);
    expect(wide.err).toBe('');
    expect(wide.code).toBe(0);
    expect(headersOf(wide.out)).toEqual(Object.keys(rowOf(wide.out)));
    expect(rowOf(wide.out)).toEqual({
      ID: 'fs1',
      REPOSITORY: 'https://git.example/fleet.git',
      REVISION: 'main',
      PATH: '.',
      STATUS: 'Error',
      COMMIT: applied,
      AUTHOR: 'ana',
      APPLIED: '-',
      SEEN: seen,
      ERROR: 'invalid-fleet-config: appsets/web.yaml: spec.template: required',
    });
  });

  it("show adds each object's commit, and when and under which break-glass it diverged", async () => {
    const objects = (out: string) => out.slice(out.lastIndexOf('\n\n') + 2);
    const table = await runInProcess(run, ['show', 'fs1', '--hub', hub.url]);
    expect(table.code).toBe(0);
    expect(headersOf(objects(table.out))).toEqual(['KIND', 'NAME', 'FILE', 'DIVERGED']);
    const wide = await runInProcess(run, ['show', 'fs1', '--hub', hub.url, '-o', 'wide']);
    expect(wide.err).toBe('');
    expect(wide.code).toBe(0);
    expect(headersOf(objects(wide.out))).toEqual(Object.keys(rowOf(objects(wide.out))));
    expect(rowOf(objects(wide.out))).toEqual({
      KIND: 'ApplicationSet',
      NAME: 'web',
      FILE: 'appsets/web.yaml',
      COMMIT: applied,
      DIVERGED: 'by user:ana',
      'DIVERGED AT': '2026-12-01T10:30:00.000Z',
      'BREAK-GLASS': '#4',
    });
  });

  it('refuses -o wide for confirm before asking the hub (exit 2)', async () => {
    const asked = hub.requests.length;
    const r = await runInProcess(run, [
      'confirm',
      'fs1',
      '--commit',
      applied,
      '--reason',
      'r',
      '-o',
      'wide',
      '--hub',
      hub.url,
    ]);
    expect(r.code).toBe(2);
    expect(r.err).toBe(
      'flotilla fleet-sources: -o wide is for listings (flotilla fleet-sources, flotilla fleet-sources list or flotilla fleet-sources show); flotilla fleet-sources confirm takes -o table, json or yaml\n',
    );
    expect(hub.requests.length).toBe(asked);
  });
});
