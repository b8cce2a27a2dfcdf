import { describe, expect, it } from 'vitest';
import { runInProcess } from '../testing/run-in-process.js';
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
