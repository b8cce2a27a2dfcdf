import { breakGlassRecordViewSchema, breakGlassViewSchema } from '@flotilla/contract';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../fleet/free-port.js';
import { runInProcess } from '../testing/run-in-process.js';
import { headersOf, rowOf, startStandInHub, type StandInHub } from '../testing/stand-in-hub.js';
import { run } from './break-glass.command.js';
import { run as windows } from './windows.command.js';

// Usage errors are found before any request; the hub-backed paths run in test/e2e/change-control.spec.ts.

describe('flotilla break-glass without a hub', () => {
  it.each([
    [['open', 'cluster'], 'missing NAME'],
    [
      ['open', 'namespace', 'x', '--reason', 'r', '--for', '5'],
      "scope must be cluster, appset or target, not 'namespace'",
    ],
    [['open', 'cluster', 'eu-1', '--for', '5'], '--reason is required'],
    [['open', 'cluster', 'eu-1', '--reason', 'r'], 'give exactly one of --for MINUTES and --until TIME'],
    [
      ['open', 'cluster', 'eu-1', '--reason', 'r', '--for', '5', '--until', '2030-01-01T00:00:00Z'],
      'give exactly one',
    ],
    [
      ['open', 'cluster', 'eu-1', '--reason', 'r', '--for', '1.5'],
      "--for must be a whole number of minutes, not '1.5'",
    ],
    [['close'], 'missing NAME'],
    [['list', '--for', '5'], "--for applies to 'break-glass open' only"],
    [['smash'], "unknown sub-command 'smash'"],
  ])('%j is a usage error (exit 2)', async (argv, message) => {
    const r = await runInProcess(run, argv);
    expect(r.code).toBe(2);
    expect(r.out).toBe('');
    expect(r.err).toContain(`flotilla break-glass: ${message}`);
  });

  it('exits 1 naming the URL when nothing listens there', async () => {
    const hub = `http://127.0.0.1:${await freePort()}`;
    const r = await runInProcess(run, ['list', '--hub', hub]);
    expect(r.code).toBe(1);
    expect(r.err).toMatch(new RegExp(`^flotilla break-glass: cannot reach the hub at ${hub}`));
  });
});

describe('flotilla windows, hub-backed forms', () => {
  it('routes list/show/history/next to the hub and leaves the offline form alone', async () => {
    const hub = `http://127.0.0.1:${await freePort()}`;
    const r = await runInProcess(windows, ['next', 'web-eu-1', '--hub', hub]);
    expect(r.code).toBe(1);
    expect(r.err).toMatch(new RegExp(`^flotilla windows: cannot reach the hub at ${hub}`));
    const usage = await runInProcess(windows, ['show']);
    expect(usage.code).toBe(2);
    expect(usage.err).toContain('missing NAME');
    // No positional: still the offline evaluator of CLI.md, which wants -f.
    const offline = await runInProcess(windows, ['--at', '2026-01-01T00:00:00Z']);
    expect(offline.code).toBe(2);
    expect(offline.err).toContain('windows needs at least one -f WINDOWS');
  });
});

describe('flotilla break-glass list and record -o wide against a stand-in hub', () => {
  const breakGlass = breakGlassViewSchema.parse({
    id: 4,
    scope: 'cluster',
    name: 'eu1',
    reason: 'incident 12',
    allowSyncOutsideWindows: true,
    pauseSelfHeal: false,
    state: 'closed',
    openedBy: 'user:ana',
    openedAt: '2026-12-01T10:00:00.000Z',
    expiresAt: '2026-12-01T12:00:00.000Z',
    closedAt: '2026-12-01T11:00:00.000Z',
    closedBy: 'user:bo',
    closeReason: 'fixed',
    manualChanges: 1,
  });
  let hub: StandInHub;
  beforeAll(async () => {
    const record = breakGlassRecordViewSchema.parse({
      breakGlass,
      changes: [
        {
          summary: 'replicas changed by kubectl',
          target: 'web-eu1',
          cluster: 'eu1',
          resource: { group: 'apps', kind: 'Deployment', namespace: 'web', name: 'web' },
          paths: ['spec.replicas'],
          manager: 'kubectl-edit',
          state: 'tolerated',
          at: '2026-12-01T10:30:00.000Z',
        },
      ],
    });
    hub = await startStandInHub({
      '/api/v1/break-glass': [breakGlass],
      '/api/v1/break-glass/4/record': record,
    });
  });
  afterAll(() => hub.close());

  it('adds when it was opened, when and by whom it was closed, and why', async () => {
    const table = await runInProcess(run, ['list', '--hub', hub.url]);
    expect(headersOf(table.out)).toEqual([
      'ID',
      'SCOPE',
      'NAME',
      'STATE',
      'OVERRIDES',
      'OPENED BY',
      'EXPIRES',
      'CHANGES',
      'REASON',
    ]);
    const wide = await runInProcess(run, ['--hub', hub.url, '-o', 'wide']);
    expect(wide.err).toBe('');
    expect(wide.code).toBe(0);
    expect(headersOf(wide.out)).toEqual(Object.keys(rowOf(wide.out)));
    expect(rowOf(wide.out)).toEqual({
      ID: '#4',
      SCOPE: 'cluster',
      NAME: 'eu1',
      STATE: 'closed',
      OVERRIDES: 'sync outside windows',
      'OPENED BY': 'user:ana',
      OPENED: '2026-12-01T10:00:00.000Z',
      EXPIRES: '2026-12-01T12:00:00.000Z',
      CLOSED: '2026-12-01T11:00:00.000Z by user:bo',
      CHANGES: '1',
      REASON: 'incident 12',
      'CLOSE REASON': 'fixed',
    });
  });

  it("record adds each changed object's API group and the agent's summary", async () => {
    const changes = (out: string) => out.slice(out.lastIndexOf('\n\n') + 2);
    const table = await runInProcess(run, ['record', '4', '--hub', hub.url]);
    expect(table.code).toBe(0);
    expect(table.out).toMatch(/^Manual changes: +1$/m);
    expect(headersOf(changes(table.out))).toEqual([
      'AT',
      'CLUSTER',
      'TARGET',
      'OBJECT',
      'PATHS',
      'MANAGER',
      'STATE',
    ]);
    const wide = await runInProcess(run, ['record', '4', '--hub', hub.url, '-o', 'wide']);
    expect(wide.err).toBe('');
    expect(wide.code).toBe(0);
    expect(headersOf(changes(wide.out))).toEqual(Object.keys(rowOf(changes(wide.out))));
    expect(rowOf(changes(wide.out))).toEqual({
      AT: '2026-12-01T10:30:00.000Z',
      CLUSTER: 'eu1',
      TARGET: 'web-eu1',
      GROUP: 'apps',
      OBJECT: 'Deployment/web/web',
      PATHS: 'spec.replicas',
      MANAGER: 'kubectl-edit',
      STATE: 'tolerated',
      SUMMARY: 'replicas changed by kubectl',
    });
  });
});
