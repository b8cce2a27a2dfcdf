import { apiTokenViewSchema } from '@flotilla/contract';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runInProcess } from '../testing/run-in-process.js';
import { headersOf, rowOf, startStandInHub, type StandInHub } from '../testing/stand-in-hub.js';
import { run } from './tokens.command.js';

// Against a real hub: test/security/tokens-cli.spec.ts (apps do not import each other).

describe('flotilla tokens usage', () => {
  it.each([
    [['frob'], "unknown sub-command 'frob'; expected list, create or revoke"],
    [['create', 'ci'], '--role must be viewer, operator or admin'],
    [['create', 'ci', '--role', 'root'], '--role must be viewer, operator or admin'],
    [
      ['create', 'ci', '--role', 'viewer', '--expires-in-days', '1.5'],
      "--expires-in-days must be a whole number of days, not '1.5'",
    ],
    [['list', '--role', 'admin'], "--role and --expires-in-days apply to 'tokens create' only"],
    [['revoke'], 'missing NAME; usage: flotilla tokens revoke NAME'],
  ])('%j is a usage error (exit 2)', async (argv, message) => {
    const r = await runInProcess(run, argv);
    expect(r.code).toBe(2);
    expect(r.out).toBe('');
    expect(r.err).toContain(`flotilla tokens: ${message}`);
  });
});

describe('flotilla tokens -o wide against a stand-in hub', () => {
  const token = apiTokenViewSchema.parse({
    name: 'ci',
    role: 'operator',
    createdBy: 'user:ana',
    createdAt: '2026-12-01T00:00:00.000Z',
    expiresAt: null,
    lastUsedAt: null,
    revokedAt: '2026-12-02T00:00:00.000Z',
  });
  let hub: StandInHub;
  beforeAll(async () => {
    hub = await startStandInHub({ '/api/v1/tokens': [token] });
  });
  afterAll(() => hub.close());

  it('adds when each token was created and revoked', async () => {
    const table = await runInProcess(run, ['--hub', hub.url]);
    expect(headersOf(table.out)).toEqual(['NAME', 'ROLE', 'STATE', 'EXPIRES', 'LAST USED', 'CREATED BY']);
    const wide = await runInProcess(run, ['list', '--hub', hub.url, '-o', 'wide']);
    expect(wide.err).toBe('');
    expect(wide.code).toBe(0);
    expect(headersOf(wide.out)).toEqual(Object.keys(rowOf(wide.out)));
    expect(rowOf(wide.out)).toEqual({
      NAME: 'ci',
      ROLE: 'operator',
      STATE: 'revoked',
      EXPIRES: 'never',
      'LAST USED': 'never',
      CREATED: '2026-12-01T00:00:00.000Z',
      REVOKED: '2026-12-02T00:00:00.000Z',
      'CREATED BY': 'user:ana',
    });
  });
});
