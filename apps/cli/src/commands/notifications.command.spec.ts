import { describe, expect, it } from 'vitest';
import { runInProcess } from '../testing/run-in-process.js';
import { run } from './notifications.command.js';

// Against a real hub and SMTP server: apps/hub/src/notifications/email.integration.spec.ts.

describe('flotilla notifications usage', () => {
  it.each([
    [[], 'missing sub-command; expected deliveries, destinations or policies'],
    [['frob'], "unknown sub-command 'frob'"],
    [
      ['deliveries', '--status', 'Lost'],
      "--status must be one of Collecting, Pending, Sent, Failed, not 'Lost'",
    ],
    [['deliveries', '--limit', '0'], "--limit must be a whole number, not '0'"],
    [['destinations', '--status', 'Sent'], "--status applies to 'notifications deliveries' only"],
    [['delete-policy'], 'missing NAME; usage: flotilla notifications delete-policy NAME'],
  ])('%j is a usage error (exit 2)', async (argv, message) => {
    const r = await runInProcess(run, argv);
    expect(r.code).toBe(2);
    expect(r.out).toBe('');
    expect(r.err).toContain(`flotilla notifications: ${message}`);
  });
});
