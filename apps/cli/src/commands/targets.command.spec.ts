import { targetListItemViewSchema } from '@flotilla/contract';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../fleet/free-port.js';
import { runInProcess } from '../testing/run-in-process.js';
import { headersOf, rowOf, startStandInHub, type StandInHub } from '../testing/stand-in-hub.js';
import { type TargetView } from '../fleet/hub-client.js';
import { reasonCell, run, targetTable } from './targets.command.js';

describe('flotilla targets without a hub', () => {
  it('exits 1 naming the URL when nothing listens there', async () => {
    const hub = `http://127.0.0.1:${await freePort()}`;
    const r = await runInProcess(run, ['--cluster', 'eu1', '--hub', hub, '-o', 'json']);
    expect(r.code).toBe(1);
    expect(r.out).toBe('');
    expect(r.err).toMatch(
      new RegExp(`^flotilla targets: cannot reach the hub at ${hub}: connect ECONNREFUSED`),
    );
  });

  it.each([
    [['eu1'], "unexpected argument 'eu1'"],
    [['--cluster'], "option '--cluster <value>' argument missing"],
    [['eu1', '-o', 'wide'], "unexpected argument 'eu1'"],
  ])('%j is a usage error (exit 2)', async (argv, message) => {
    const r = await runInProcess(run, argv);
    expect(r.code).toBe(2);
    expect(r.err).toContain(`flotilla targets: ${message}`);
  });
});

describe('flotilla targets delete', () => {
  it.each([
    [['delete', 'web-eu1', '--reason', 'gone'], '--cascade is required'],
    [['delete', 'web-eu1', '--cascade'], '--reason is required'],
    [['delete', '--cascade', '--reason', 'gone'], 'missing NAME'],
    [['--cascade', '--reason', 'gone'], '--cascade and --reason belong to: flotilla targets delete'],
  ])('%j is a usage error (exit 2) and asks nothing', async (argv, message) => {
    const hub = `http://127.0.0.1:${await freePort()}`;
    const r = await runInProcess(run, [...argv, '--hub', hub]);
    expect(r.code).toBe(2);
    expect(r.err).toContain(`flotilla targets: ${message}`);
  });

  it('asks the hub for the deletion (exit 1 naming the URL when nothing listens)', async () => {
    const hub = `http://127.0.0.1:${await freePort()}`;
    const r = await runInProcess(run, ['delete', 'web-eu1', '--cascade', '--reason', 'gone', '--hub', hub]);
    expect(r.code).toBe(1);
    expect(r.err).toMatch(new RegExp(`^flotilla targets: cannot reach the hub at ${hub}`));
  });
});

describe('the REASON column of flotilla targets', () => {
  const target = (name: string, cluster: string, reason: TargetView['reason']): TargetView => ({
    id: `id-${name}`,
    name,
    cluster,
    appSet: 'web',
    namespace: 'web',
    repoUrl: 'https://git.example/web.git',
    path: 'apps/web',
    targetRevision: 'main',
    desiredRevision: 'a'.repeat(40),
    sources: null,
    bundleDigest: null,
    releasedRevision: null,
    pin: null,
    syncPolicy: null,
    syncStatus: reason ? 'OutOfSync' : 'Synced',
    health: 'Healthy',
    healthMessage: null,
    lastSyncedRevision: null,
    lastSyncedAt: null,
    lastReportAt: null,
    reason,
    stale: null,
  });

  it('shows the code and the message, `-` when there is no reason, sorted by cluster then target', () => {
    const table = targetTable([
      target('web-eu2', 'eu2', {
        code: 'WindowClosed',
        message: 'blocked by window eu-night-freeze; next open 2026-12-05T06:00:00.000Z',
        window: 'eu-night-freeze',
        nextOpen: '2026-12-05T06:00:00.000Z',
      }),
      target('web-eu1', 'eu1', null),
      target('api-eu2', 'eu2', { code: 'AgentOffline', message: 'agent never seen', since: null }),
    ]);
    const [header, ...rows] = table.split('\n');
    expect(header?.split(/ {3,}/)).toEqual([
      'CLUSTER',
      'TARGET',
      'REVISION',
      'SYNC',
      'HEALTH',
      'LAST SYNC',
      'REASON',
    ]);
    const reasonAt = header!.indexOf('REASON');
    expect(rows.map((r) => [r.split(/\s+/)[1], r.slice(reasonAt)])).toEqual([
      ['web-eu1', '-'],
      ['api-eu2', 'AgentOffline: agent never seen'],
      ['web-eu2', 'WindowClosed: blocked by window eu-night-freeze; next open 2026-12-05T06:00:00.000Z'],
    ]);
  });

  it('keeps a long or multi-line message to one short line', () => {
    const cell = reasonCell({ code: 'SyncFailed', message: `apply Deployment web:\n  ${'x'.repeat(200)}` });
    expect(cell).not.toContain('\n');
    expect(cell.startsWith('SyncFailed: apply Deployment web: xxx')).toBe(true);
    expect(cell.endsWith('…')).toBe(true);
    expect(cell.length).toBeLessThanOrEqual('SyncFailed: '.length + 72);
  });

  it('shows the code alone when the message is empty, and `-` for a hub that sends no reason', () => {
    expect(reasonCell({ code: 'Progressing', message: '' })).toBe('Progressing');
    expect(reasonCell(undefined)).toBe('-');
  });
});

describe('flotilla targets -o wide against a stand-in hub', () => {
  const desired = '0123456789abcdef0123456789abcdef01234567';
  const released = 'fedcba9876543210fedcba9876543210fedcba98';
  const target: TargetView = targetListItemViewSchema.parse({
    id: 't1',
    name: 'web-eu1',
    cluster: 'eu1',
    appSet: 'web',
    namespace: 'web-prod',
    repoUrl: 'https://git.example/web.git',
    path: 'apps/web',
    targetRevision: 'main',
    desiredRevision: desired,
    sources: null,
    bundleDigest: 'sha256:abc',
    releasedRevision: released,
    pin: { revision: released, reason: 'hold', actor: 'user:ana', expiresAt: null },
    syncPolicy: null,
    syncStatus: 'Synced',
    health: 'Healthy',
    healthMessage: null,
    lastSyncedRevision: released,
    lastSyncedAt: null,
    lastReportAt: null,
    reason: null,
    stale: { lastSeenAt: null },
  });
  let hub: StandInHub;
  beforeAll(async () => {
    hub = await startStandInHub({ '/api/v1/targets': [target] });
  });
  afterAll(() => hub.close());

  it('keeps the table as it was and adds the columns to debug by, with whole commits', async () => {
    const table = await runInProcess(run, ['--hub', hub.url]);
    expect(table.code).toBe(0);
    expect(headersOf(table.out)).toEqual([
      'CLUSTER',
      'TARGET',
      'REVISION',
      'SYNC',
      'HEALTH',
      'LAST SYNC',
      'REASON',
    ]);
    expect(rowOf(table.out)['REVISION']).toBe('0123456');

    const wide = await runInProcess(run, ['--hub', hub.url, '-o', 'wide']);
    expect(wide.err).toBe('');
    expect(wide.code).toBe(0);
    expect(headersOf(wide.out)).toEqual([
      'CLUSTER',
      'TARGET',
      'APPSET',
      'NAMESPACE',
      'REVISION',
      'RELEASED',
      'SYNCED',
      'PIN',
      'SYNC',
      'HEALTH',
      'LAST SYNC',
      'LAST REPORT',
      'STALE',
      'REASON',
    ]);
    expect(rowOf(wide.out)).toEqual({
      CLUSTER: 'eu1',
      TARGET: 'web-eu1',
      APPSET: 'web',
      NAMESPACE: 'web-prod',
      REVISION: desired,
      RELEASED: released,
      SYNCED: released,
      PIN: `${released} by user:ana`,
      SYNC: 'Synced (stale)',
      HEALTH: 'Healthy (stale)',
      'LAST SYNC': '-',
      'LAST REPORT': '-',
      STALE: 'never seen',
      REASON: '-',
    });
  });

  it('watches with the wide table', async () => {
    const r = await runInProcess(run, ['--watch', '--timeout', '1', '-o', 'wide', '--hub', hub.url]);
    expect(r.code).toBe(0);
    // The answer does not change: shown once, wide.
    expect(r.out.trimEnd().split('\n')).toHaveLength(2);
    expect(headersOf(r.out)).toContain('NAMESPACE');
    expect(rowOf(r.out)['REVISION']).toBe(desired);
  });

  it('refuses -o wide for delete before asking the hub (exit 2)', async () => {
    const asked = hub.requests.length;
    const r = await runInProcess(run, [
      'delete',
      'web-eu1',
      '--cascade',
      '--reason',
      'r',
      '-o',
      'wide',
      '--hub',
      hub.url,
    ]);
    expect(r.code).toBe(2);
    expect(r.err).toBe(
      'flotilla targets: -o wide is for listings (flotilla targets); flotilla targets delete takes -o table, json or yaml\n',
    );
    expect(hub.requests.length).toBe(asked);
  });
});
