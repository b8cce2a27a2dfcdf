import { targetOperationViewSchema } from '@flotilla/contract';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runInProcess } from '../testing/run-in-process.js';
import { headersOf, rowOf, startStandInHub, type StandInHub } from '../testing/stand-in-hub.js';
import { run } from './operations.command.js';

describe('flotilla operations usage', () => {
  it.each([
    [['frob'], "unknown sub-command 'frob'; expected list, cancel or terminate"],
    [['list'], 'missing NAME; usage: flotilla operations list TARGET | flotilla operations list --batch ID'],
    [['list', 'web', '--batch', 'b1'], "unexpected argument 'web'"],
    [
      ['list', 'web', '--reason', 'x'],
      "--reason, --wait and --timeout apply to 'operations cancel|terminate' only",
    ],
    [['cancel'], 'missing OPERATION; usage: flotilla operations cancel OPERATION --reason TEXT'],
  ])('%j is a usage error (exit 2)', async (argv, message) => {
    const r = await runInProcess(run, [...argv, '--hub', 'http://127.0.0.1:9']);
    expect(r.code).toBe(2);
    expect(r.out).toBe('');
    expect(r.err).toContain(`flotilla operations: ${message}`);
  });

  it('cancel and terminate are flotilla sync --cancel / --terminate (which asks for a reason)', async () => {
    const r = await runInProcess(run, ['terminate', 'op-1', '--hub', 'http://127.0.0.1:9']);
    expect(r.code).toBe(2);
    expect(r.err).toContain('flotilla sync: --reason is required');
  });
});

describe('flotilla operations against a stand-in hub', () => {
  const operation = targetOperationViewSchema.parse({
    id: 'op-1',
    target: 'web-eu1',
    kind: 'sync',
    prune: false,
    dryRun: false,
    force: false,
    syncOptions: [],
    revision: '0123456789abcdef0123456789abcdef01234567',
    resources: [],
    batchId: null,
    requestedBy: 'user:ana',
    reason: 'hotfix',
    state: 'Succeeded',
    message: '',
    createdAt: '2026-12-01T00:00:00.000Z',
    expiresAt: '2026-12-01T01:00:00.000Z',
    finishedAt: '2026-12-01T00:00:05.000Z',
    terminate: null,
  });
  let hub: StandInHub;
  beforeAll(async () => {
    hub = await startStandInHub({ '/api/v1/targets/web-eu1/operations': [operation] });
  });
  afterAll(() => hub.close());

  it("lists a target's requested syncs; -o wide adds batch, dry run, revision, expiry and end", async () => {
    const table = await runInProcess(run, ['list', 'web-eu1', '--hub', hub.url]);
    expect(table.err).toBe('');
    expect(headersOf(table.out)).toEqual([
      'OPERATION',
      'TARGET',
      'KIND',
      'STATE',
      'REQUESTED BY',
      'AGE',
      'REASON',
      'MESSAGE',
    ]);
    const wide = await runInProcess(run, ['list', 'web-eu1', '--hub', hub.url, '-o', 'wide']);
    expect(wide.code).toBe(0);
    const row = rowOf(wide.out);
    expect(row).toMatchObject({
      OPERATION: 'op-1',
      STATE: 'Succeeded',
      BATCH: '-',
      'DRY RUN': 'no',
      REVISION: '0123456789abcdef0123456789abcdef01234567',
      FINISHED: '2026-12-01T00:00:05.000Z',
      REASON: 'hotfix',
      MESSAGE: '-',
    });
  });
});
