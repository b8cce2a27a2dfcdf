import {
  notificationDeliveryViewSchema,
  notificationDestinationViewSchema,
  notificationPolicyViewSchema,
} from '@flotilla/contract';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runInProcess } from '../testing/run-in-process.js';
import { headersOf, rowOf, startStandInHub, type StandInHub } from '../testing/stand-in-hub.js';
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
    [['apply-policy'], 'apply-policy needs -f FILE (YAML or JSON)'],
    [['apply-destination', '-f', '/nonexistent/slack.yaml'], 'cannot read /nonexistent/slack.yaml: ENOENT'],
    [['policies', '-f', 'p.yaml'], "-f applies to 'notifications apply-destination' and 'apply-policy' only"],
  ])('%j is a usage error (exit 2)', async (argv, message) => {
    const r = await runInProcess(run, argv);
    expect(r.code).toBe(2);
    expect(r.out).toBe('');
    expect(r.err).toContain(`flotilla notifications: ${message}`);
  });
});

describe('flotilla notifications -o wide against a stand-in hub', () => {
  const delivery = notificationDeliveryViewSchema.parse({
    id: 'd1',
    dedupeKey: 'k',
    policy: 'oncall',
    trigger: 'sync-failed',
    destination: 'pager',
    status: 'Sent',
    eventCount: 2,
    attempts: 1,
    lastError: null,
    sendAfter: '2026-12-01T10:00:10.000Z',
    sentAt: '2026-12-01T10:00:11.000Z',
    createdAt: '2026-12-01T10:00:00.000Z',
    events: [],
  });
  const destination = notificationDestinationViewSchema.parse({
    name: 'pager',
    type: 'webhook',
    config: { url: 'https://hooks.example/p' },
    hasSecret: true,
    createdBy: 'user:ana',
    createdAt: '2026-12-01T00:00:00.000Z',
    updatedAt: '2026-12-02T00:00:00.000Z',
  });
  const policy = notificationPolicyViewSchema.parse({
    apiVersion: 'flotilla.dev/v1alpha1',
    kind: 'NotificationPolicy',
    metadata: { name: 'oncall' },
    spec: {
      triggers: ['sync-failed'],
      destinations: ['pager'],
      appSets: ['web-*'],
      projects: [],
      digestWindow: '30s',
    },
    managedBy: 'git',
    sourceCommit: '0123456789abcdef0123456789abcdef01234567',
  });
  let hub: StandInHub;
  beforeAll(async () => {
    hub = await startStandInHub({
      '/api/v1/notifications/deliveries': [delivery],
      '/api/v1/notifications/destinations': [destination],
      '/api/v1/notifications/policies': [policy],
    });
  });
  afterAll(() => hub.close());

  const wideRow = async (sub: string) => {
    const r = await runInProcess(run, [sub, '--hub', hub.url, '-o', 'wide']);
    expect(r.err).toBe('');
    expect(r.code).toBe(0);
    expect(headersOf(r.out)).toEqual(Object.keys(rowOf(r.out)));
    return rowOf(r.out);
  };

  it('deliveries adds the id, when it may be sent and when it was', async () => {
    const table = await runInProcess(run, ['deliveries', '--hub', hub.url]);
    expect(headersOf(table.out)).toEqual([
      'CREATED',
      'POLICY',
      'TRIGGER',
      'DESTINATION',
      'STATUS',
      'EVENTS',
      'ATTEMPTS',
      'LAST ERROR',
    ]);
    expect(await wideRow('deliveries')).toEqual({
      ID: 'd1',
      CREATED: expect.stringMatching(/ ago$/) as string,
      POLICY: 'oncall',
      TRIGGER: 'sync-failed',
      DESTINATION: 'pager',
      STATUS: 'Sent',
      EVENTS: '2',
      ATTEMPTS: '1',
      'SEND AFTER': '2026-12-01T10:00:10.000Z',
      SENT: '2026-12-01T10:00:11.000Z',
      'LAST ERROR': '',
    });
  });

  it('destinations adds when each was created and updated', async () => {
    const table = await runInProcess(run, ['destinations', '--hub', hub.url]);
    expect(headersOf(table.out)).toEqual(['NAME', 'TYPE', 'WHERE', 'SECRET', 'CREATED BY']);
    expect(await wideRow('destinations')).toEqual({
      NAME: 'pager',
      TYPE: 'webhook',
      WHERE: 'https://hooks.example/p',
      SECRET: 'sealed',
      CREATED: '2026-12-01T00:00:00.000Z',
      UPDATED: '2026-12-02T00:00:00.000Z',
      'CREATED BY': 'user:ana',
    });
  });

  it('policies adds the appsets, projects and digest window, and the commit that manages it', async () => {
    const table = await runInProcess(run, ['policies', '--hub', hub.url]);
    expect(headersOf(table.out)).toEqual(['NAME', 'TRIGGERS', 'DESTINATIONS', 'MANAGED BY']);
    expect(await wideRow('policies')).toEqual({
      NAME: 'oncall',
      TRIGGERS: 'sync-failed',
      DESTINATIONS: 'pager',
      APPSETS: 'web-*',
      PROJECTS: '*',
      'DIGEST WINDOW': '30s',
      'MANAGED BY': 'git',
      'SOURCE COMMIT': '0123456789abcdef0123456789abcdef01234567',
    });
  });
});
