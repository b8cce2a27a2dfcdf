import { syncRunViewSchema } from '@flotilla/contract';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../fleet/free-port.js';
import { runInProcess } from '../testing/run-in-process.js';
import { headersOf, rowOf, startStandInHub, type StandInHub } from '../testing/stand-in-hub.js';
import { run } from './history.command.js';

describe('flotilla history without a hub', () => {
  it('exits 1 naming the URL when nothing listens there, with nothing on stdout even for --ndjson', async () => {
    const hub = `http://127.0.0.1:${await freePort()}`;
    const r = await runInProcess(run, ['--all', '--ndjson', '--hub', hub]);
    expect(r.code).toBe(1);
    expect(r.out).toBe('');
    expect(r.err).toMatch(
      new RegExp(`^flotilla history: cannot reach the hub at ${hub}: connect ECONNREFUSED`),
    );
  });

  it.each([
    [['--limit', '0'], "--limit must be a positive integer, not '0'"],
    [['--limit', '2.5'], "--limit must be a positive integer, not '2.5'"],
    [['--limit', '5', '--all'], '--limit and --all exclude each other'],
    [['--ndjson', '-o', 'json'], '--ndjson and -o exclude each other'],
    [['web-eu1'], "unexpected argument 'web-eu1'"],
  ])('%j is a usage error (exit 2)', async (argv, message) => {
    const r = await runInProcess(run, argv);
    expect(r.code).toBe(2);
    expect(r.out).toBe('');
    expect(r.err).toContain(`flotilla history: ${message}`);
  });
});

describe('flotilla history -o wide against a stand-in hub', () => {
  const sha = '0123456789abcdef0123456789abcdef01234567';
  const syncRun = syncRunViewSchema.parse({
    id: 'r1',
    target: 'web-eu1',
    cluster: 'eu1',
    appSet: 'web',
    revision: sha,
    bundleDigest: 'sha256:b1',
    trigger: 'manual',
    outcome: 'Succeeded',
    message: 'synced',
    startedAt: '2026-12-01T10:00:00.000Z',
    finishedAt: '2026-12-01T10:00:02.000Z',
    resources: [],
    reportId: 'rep1',
    operationId: 'op-7',
  });
  let hub: StandInHub;
  beforeAll(async () => {
    hub = await startStandInHub({ '/api/v1/sync-runs': { items: [syncRun], nextCursor: null } });
  });
  afterAll(() => hub.close());

  it('adds the appset, the whole commit, the operation and the bundle', async () => {
    const table = await runInProcess(run, ['--hub', hub.url]);
    expect(table.code).toBe(0);
    expect(headersOf(table.out)).toEqual([
      'STARTED',
      'CLUSTER',
      'TARGET',
      'REVISION',
      'TRIGGER',
      'OUTCOME',
      'DURATION',
      'MESSAGE',
    ]);
    const wide = await runInProcess(run, ['--hub', hub.url, '-o', 'wide']);
    expect(wide.err).toBe('');
    expect(wide.code).toBe(0);
    const row = rowOf(wide.out);
    expect(headersOf(wide.out)).toEqual(Object.keys(row));
    expect(row).toEqual({
      STARTED: '2026-12-01T10:00:00Z',
      CLUSTER: 'eu1',
      TARGET: 'web-eu1',
      APPSET: 'web',
      REVISION: sha,
      TRIGGER: 'manual',
      OUTCOME: 'Succeeded',
      DURATION: '2.0s',
      OPERATION: 'op-7',
      BUNDLE: 'sha256:b1',
      MESSAGE: 'synced',
    });
  });

  it('refuses --ndjson with -o wide, as with every -o', async () => {
    const r = await runInProcess(run, ['--ndjson', '-o', 'wide', '--hub', hub.url]);
    expect(r.code).toBe(2);
    expect(r.err).toContain('--ndjson and -o exclude each other');
  });
});
