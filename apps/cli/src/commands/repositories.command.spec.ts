import { repositoryViewSchema } from '@flotilla/contract';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runInProcess } from '../testing/run-in-process.js';
import { headersOf, rowOf, startStandInHub, type StandInHub } from '../testing/stand-in-hub.js';
import { run } from './repositories.command.js';

// Against a real hub: apps/hub/src/sources/verification/verified-sources.integration.spec.ts sets the
// same settings through the API this command calls.

describe('flotilla repositories usage', () => {
  it.each([
    [
      ['frob'],
      "unknown sub-command 'frob'; expected list, get, add, refresh, credentials, remove-credentials, verification, verify, verification-history",
    ],
    [
      ['refresh', 'file:///r', '--username', 'ci'],
      "--username, --password-stdin and --ssh-key apply to 'repositories add' and 'repositories credentials' only",
    ],
    [['add', 'https://git.example.com/a.git', '--username', 'ci'], '--password-stdin is required'],
    [['add', 'https://git.example.com/a.git', '--password-stdin'], '--username is required with a token'],
    [
      ['add', 'https://git.example.com/a.git', '--ssh-key', '/nonexistent/id_ed25519', '--username', 'ci'],
      'give an HTTPS token or an SSH key, not both',
    ],
    [
      ['add', 'https://git.example.com/a.git', '--ssh-key', '/nonexistent/id_ed25519'],
      '--ssh-key: cannot read',
    ],
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

describe('flotilla repositories -o wide against a stand-in hub', () => {
  const sha = '0123456789abcdef0123456789abcdef01234567';
  const repository = repositoryViewSchema.parse({
    id: 'r1',
    url: 'https://git.example/web.git',
    hasCredentials: true,
    credentials: { type: 'https', username: 'bot' },
    status: 'Error',
    error: 'fetch failed:\n  authentication required',
    lastFetchedAt: null,
    lastAttemptAt: null,
    refs: { main: sha },
    lastFetchedCommit: sha,
    verificationMode: 'head',
  });
  let hub: StandInHub;
  beforeAll(async () => {
    hub = await startStandInHub({ '/api/v1/repositories': [repository] });
  });
  afterAll(() => hub.close());

  it('adds the whole commit, the last attempt, the kind of credentials and the error', async () => {
    const table = await runInProcess(run, ['--hub', hub.url]);
    expect(headersOf(table.out)).toEqual(['URL', 'STATUS', 'HEAD', 'FETCHED', 'VERIFICATION']);
    const wide = await runInProcess(run, ['--hub', hub.url, '-o', 'wide']);
    expect(wide.err).toBe('');
    expect(wide.code).toBe(0);
    expect(headersOf(wide.out)).toEqual(Object.keys(rowOf(wide.out)));
    expect(rowOf(wide.out)).toEqual({
      URL: 'https://git.example/web.git',
      STATUS: 'Error',
      HEAD: sha,
      FETCHED: '-',
      'LAST ATTEMPT': '-',
      CREDENTIALS: 'https bot',
      VERIFICATION: 'head',
      ERROR: 'fetch failed: authentication required',
    });
  });
});
