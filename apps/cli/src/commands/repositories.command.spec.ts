import { describe, expect, it } from 'vitest';
import { runInProcess } from '../testing/run-in-process.js';
import { run } from './repositories.command.js';

// Against a real hub: apps/hub/src/sources/verification/verified-sources.integration.spec.ts sets the
// same settings through the API this command calls.

describe('flotilla repositories usage', () => {
  it.each([
    [['frob'], "unknown sub-command 'frob'; expected list, verification, verify or verification-history"],
    [
      ['list', '--mode', 'head'],
      "--mode, --allowed-signers and --gpg-keys apply to 'repositories verify' only",
    ],
    [['verify', 'file:///r'], '--mode must be none, head, strict'],
    [['verify', 'file:///r', '--mode', 'always'], '--mode must be none, head, strict'],
  ])('%j is a usage error (exit 2)', async (argv, message) => {
    const r = await runInProcess(run, argv);
    expect(r.code).toBe(2);
    expect(r.out).toBe('');
    expect(r.err).toContain(`flotilla repositories: ${message}`);
  });
});
