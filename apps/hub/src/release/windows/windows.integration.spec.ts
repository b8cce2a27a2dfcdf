import 'reflect-metadata';
import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import type {
  AssignmentsResponse,
  SyncWindowVersionView as WindowVersionView,
  SyncWindowView as WindowView,
  TargetWindowsView,
  SyncWindowCalendarView,
} from '@flotilla/contract';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTwoClusterFleet, type TwoClusterFleet } from '../../testing/two-cluster-fleet.js';

// Sync windows on the real hub (PostgreSQL, Redis, Git), the agents' side spoken by hand over the
// agent protocol: validation with field paths, versions and audit, the windows that pick each
// target in its assignment (waking a waiting long-poll), and "pending, eligible at T".

let fleet: TwoClusterFleet;

const CLI = fileURLToPath(new URL('../../../../cli/dist/main.js', import.meta.url));
/** The built CLI's `flotilla windows next TARGET`, as a person reads it. */
async function windowsNext(target: string): Promise<string> {
  const { stdout } = await promisify(execFile)(process.execPath, [CLI, 'windows', 'next', target], {
    env: { ...process.env, ...fleet.cliEnv },
    timeout: 30_000,
  });
  return stdout;
}

const assignments = (cluster: 'eu-1' | 'us-1', headers: Record<string, string> = {}, wait = 0) =>
  fleet.agent<AssignmentsResponse>(
    cluster,
    'GET',
    `/api/agent/v1/assignments?wait=${wait}`,
    undefined,
    headers,
  );

const freezeEu = {
  name: 'freeze-eu',
  kind: 'deny',
  schedule: '* * * * *',
  duration: '1h',
  clusters: ['eu-*'],
  description: 'no change in Europe',
  reason: 'INC-1 stabilising',
};

interface AuditItem {
  actor: string;
  action: string;
  scope: string;
  details: Record<string, unknown>;
}

describe('sync windows at the hub', () => {
  beforeAll(async () => {
    fleet = await startTwoClusterFleet();
  }, 180_000);
  afterAll(async () => {
    await fleet?.close();
  }, 60_000);

  it('refuses a bad window with the offending field and stores nothing', async () => {
    const cases: [Record<string, unknown>, number, string, string][] = [
      [{ ...freezeEu, schedule: '61 * * * *' }, 400, 'invalid-schedule', 'schedule'],
      [{ ...freezeEu, duration: '1d' }, 400, 'invalid-duration', 'duration'],
      [{ ...freezeEu, timeZone: 'Mars/Olympus' }, 400, 'invalid-time-zone', 'timeZone'],
      [{ ...freezeEu, kind: 'maybe' }, 400, 'invalid-kind', 'kind'],
      [{ ...freezeEu, clusters: ['eu-*', 7] }, 400, 'invalid-field', 'clusters[1]'],
      [{ ...freezeEu, shedule: '* * * * *' }, 400, 'invalid-request', 'shedule'],
      [{ ...freezeEu, name: 'Freeze EU' }, 400, 'invalid-request', 'name'],
    ];
    for (const [body, status, code, path] of cases) {
      const r = await fleet.call<{ code: string; path: string; message: string }>(
        'POST',
        '/api/v1/windows',
        body,
      );
      expect({ status: r.status, code: r.body.code, path: r.body.path }).toEqual({ status, code, path });
      expect(r.body.message).toContain(path);
    }
    expect((await fleet.call('GET', '/api/v1/windows')).body).toEqual([]);
    const audit = await fleet.call<{ items: AuditItem[] }>('GET', '/api/v1/audit?action=window.');
    expect(audit.body.items).toEqual([]);
  });

  it('puts a new window into the assignments of the targets it picks, waking the waiting long-poll', async () => {
    const before = await assignments('eu-1');
    expect(before.status).toBe(200);
    expect(before.body.assignments.map((a) => [a.name, a.windows])).toEqual([['web-eu-1', []]]);
    const usBefore = await assignments('us-1');

    // The agent waits with the current ETag; creating the window must answer it early.
    const waiting = assignments('eu-1', { 'if-none-match': before.etag ?? '' }, 30);
    const t0 = Date.now();
    const created = await fleet.call<WindowView>('POST', '/api/v1/windows', freezeEu, 'alice');
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({ name: 'freeze-eu', version: 1, kind: 'deny', timeZone: 'UTC' });
    const woken = await waiting;
    expect(Date.now() - t0).toBeLessThan(25_000);
    expect(woken.status).toBe(200);
    expect(woken.etag).not.toBe(before.etag);
    expect(woken.body.assignments[0]?.windows).toEqual([
      {
        // The name travels so the agent's "blocked by window freeze-eu" can say which one holds it.
        name: 'freeze-eu',
        kind: 'deny',
        schedule: '* * * * *',
        duration: '1h',
        timeZone: 'UTC',
        applications: [],
        namespaces: [],
        clusters: ['eu-*'],
        manualSync: false,
        andOperator: false,
      },
    ]);
    // us-1 is not picked: same assignments, same ETag.
    const usAfter = await assignments('us-1');
    expect(usAfter.etag).toBe(usBefore.etag);
    expect(usAfter.body.assignments[0]?.windows).toEqual([]);
  }, 60_000);

  it('shows which windows hold a target, and a blocked sync as pending until the window ends', async () => {
    const held = await fleet.call<TargetWindowsView>('GET', '/api/v1/targets/web-eu-1/windows');
    expect(held.body).toMatchObject({
      target: 'web-eu-1',
      cluster: 'eu-1',
      windows: [{ name: 'freeze-eu', kind: 'deny', active: true }],
      canSync: false,
      canSyncManually: false,
      // Fires every minute for an hour: always active, so nothing opens within the horizon.
      nextOpen: null,
      nextClose: null,
      heldBy: ['freeze-eu'],
      pending: null,
    });

    // The agent reports that the window blocked its automatic sync of the desired revision.
    const [a] = (await assignments('eu-1')).body.assignments;
    const at = new Date().toISOString();
    const report = {
      type: 'sync',
      id: randomUUID(),
      targetId: a?.targetId,
      at,
      revision: a?.revision,
      bundleDigest: a?.bundleDigest,
      trigger: 'auto',
      outcome: 'Blocked',
      startedAt: at,
      finishedAt: at,
      message: 'blocked by sync windows',
      resources: [],
    };
    expect((await fleet.agent('eu-1', 'POST', '/api/agent/v1/reports', { reports: [report] })).status).toBe(
      200,
    );
    // Issue #17: `windows next` answered "eligible at no time within a year" for a target held by a
    // window that is always in force; it says which window, and that deleting or changing it ends it.
    const text = await windowsNext('web-eu-1');
    expect(text).toMatch(/Held by:\s+freeze-eu\n/);
    expect(text).toContain(
      'eligible when window freeze-eu is changed or deleted (always in force; nothing opens within a year)',
    );
    expect(text).not.toContain('no time within a year');

    // A window that started a minute ago and lasts ten: eligible when it ends.
    const now = new Date();
    const fired = new Date(Math.floor(now.getTime() / 60_000) * 60_000 - 60_000);
    const ends = new Date(fired.getTime() + 10 * 60_000);
    const updated = await fleet.call<WindowView>(
      'PUT',
      '/api/v1/windows/freeze-eu',
      {
        ...freezeEu,
        name: undefined,
        schedule: `${fired.getUTCMinutes()} ${fired.getUTCHours()} * * *`,
        duration: '10m',
        reason: 'shorter',
      },
      'bob',
    );
    expect(updated.status).toBe(200);
    expect(updated.body.version).toBe(2);
    const pending = await fleet.call<TargetWindowsView>('GET', '/api/v1/targets/web-eu-1/windows');
    expect(pending.body).toMatchObject({ canSync: false, nextOpen: ends.toISOString(), nextClose: null });
    expect(pending.body.pending).toEqual({
      revision: a?.revision,
      trigger: 'auto',
      since: at,
      message: 'blocked by sync windows',
      eligibleAt: ends.toISOString(),
    });
    // Not picked: no window, may sync, nothing pending.
    const us = await fleet.call<TargetWindowsView>('GET', '/api/v1/targets/web-us-1/windows');
    expect(us.body).toMatchObject({ windows: [], canSync: true, nextClose: null, pending: null });
    expect((await fleet.call('GET', '/api/v1/targets/nope/windows')).status).toBe(404);

    // The revision lands (a break-glass, say): nothing pending. Then a window blocks a self-heal of
    // the synced target: pending again, as a self-heal.
    const later = new Date(Date.now() + 1_000).toISOString();
    const landed = {
      ...report,
      id: randomUUID(),
      at: later,
      startedAt: later,
      finishedAt: later,
      outcome: 'Succeeded',
    };
    expect((await fleet.agent('eu-1', 'POST', '/api/agent/v1/reports', { reports: [landed] })).status).toBe(
      200,
    );
    expect(
      (await fleet.call<TargetWindowsView>('GET', '/api/v1/targets/web-eu-1/windows')).body.pending,
    ).toBeNull();
    const healAt = new Date(Date.now() + 2_000).toISOString();
    const healBlocked = {
      ...report,
      id: randomUUID(),
      at: healAt,
      startedAt: healAt,
      finishedAt: healAt,
      trigger: 'self-heal',
    };
    expect(
      (await fleet.agent('eu-1', 'POST', '/api/agent/v1/reports', { reports: [healBlocked] })).status,
    ).toBe(200);
    expect(
      (await fleet.call<TargetWindowsView>('GET', '/api/v1/targets/web-eu-1/windows')).body.pending,
    ).toMatchObject({
      trigger: 'self-heal',
      since: healAt,
      eligibleAt: ends.toISOString(),
    });
  });

  it("scoped to projects, a window governs only those projects' targets; an unknown project is refused", async () => {
    const unknown = await fleet.call<{ code: string; path: string; message: string }>(
      'POST',
      '/api/v1/windows',
      {
        ...freezeEu,
        name: 'freeze-payments',
        projects: ['payments'],
      },
    );
    expect(unknown.status).toBe(400);
    expect(unknown.body).toMatchObject({ code: 'invalid-request', path: 'projects[0]' });
    expect(unknown.body.message).toContain('no project named "payments"');

    const project = {
      apiVersion: 'flotilla.dev/v1alpha1',
      kind: 'Project',
      metadata: { name: 'payments' },
      spec: { sourceRepos: ['*'], destinations: [{ cluster: '*', namespace: '*' }] },
    };
    expect((await fleet.call('POST', '/api/v1/projects', project)).status).toBe(201);
    // web-eu-1's appset is in the default project: a window of the payments project passes it by,
    // however its selectors match; a window of the default project governs it.
    const payments = await fleet.call<WindowView>('POST', '/api/v1/windows', {
      ...freezeEu,
      name: 'freeze-payments',
      projects: ['payments', 'payments'],
    });
    expect(payments.status).toBe(201);
    expect(payments.body.projects).toEqual(['payments']);
    expect(
      (
        await fleet.call<WindowView>('POST', '/api/v1/windows', {
          ...freezeEu,
          name: 'freeze-default',
          projects: ['default'],
        })
      ).status,
    ).toBe(201);
    const view = await fleet.call<TargetWindowsView>('GET', '/api/v1/targets/web-eu-1/windows');
    expect(view.body.windows.map((w) => w.name)).toEqual(['freeze-default', 'freeze-eu']);
    // The agent gets the same two (both say "deny eu-* now"), not the payments one.
    expect((await assignments('eu-1')).body.assignments[0]?.windows).toHaveLength(2);
    const history = await fleet.call<WindowVersionView[]>('GET', '/api/v1/windows/freeze-payments/history');
    expect(history.body[0]?.projects).toEqual(['payments']);
    for (const name of ['freeze-payments', 'freeze-default'])
      expect((await fleet.call('DELETE', `/api/v1/windows/${name}?reason=test`)).status).toBe(204);
  });

  it('draws a window as intervals in absolute time, DST included, and refuses a bad range by field', async () => {
    const created = await fleet.call('POST', '/api/v1/windows', {
      name: 'berlin-night',
      kind: 'deny',
      schedule: '0 1 * * *',
      duration: '2h',
      timeZone: 'Europe/Berlin',
      clusters: ['nowhere-*'],
      reason: 'calendar',
    });
    expect(created.status).toBe(201);
    const r = await fleet.call<SyncWindowCalendarView>(
      'GET',
      '/api/v1/windows/berlin-night/calendar?from=2026-03-28T00:00:00Z&days=2',
    );
    expect(r.status).toBe(200);
    expect(r.body).toEqual({
      window: 'berlin-night',
      kind: 'deny',
      timeZone: 'Europe/Berlin',
      from: '2026-03-28T00:00:00.000Z',
      to: '2026-03-30T00:00:00.000Z',
      // 01:00 in Berlin: 00:00Z under CET, then 23:00Z under CEST after the change on the 29th.
      intervals: [
        { start: '2026-03-28T00:00:00.000Z', end: '2026-03-28T02:00:00.000Z' },
        { start: '2026-03-29T00:00:00.000Z', end: '2026-03-29T02:00:00.000Z' },
        { start: '2026-03-29T23:00:00.000Z', end: '2026-03-30T00:00:00.000Z' },
      ],
    });
    const bad = await fleet.call<{ code: string; path: string }>(
      'GET',
      '/api/v1/windows/berlin-night/calendar?days=90',
    );
    expect({ status: bad.status, path: bad.body.path }).toEqual({ status: 400, path: 'days' });
    expect((await fleet.call('GET', '/api/v1/windows/nope/calendar')).status).toBe(404);
    expect((await fleet.call('DELETE', '/api/v1/windows/berlin-night?reason=done')).status).toBe(204);
  });

  it('keeps every version with who, when and why, also after delete, and audits each change', async () => {
    const put = await fleet.call('PUT', '/api/v1/windows/freeze-eu', { ...freezeEu, name: 'other' });
    expect(put).toMatchObject({ status: 400, body: { code: 'invalid-request', path: 'name' } });
    expect((await fleet.call('POST', '/api/v1/windows', freezeEu)).status).toBe(409);
    expect((await fleet.call('PUT', '/api/v1/windows/nope', { ...freezeEu, name: undefined })).status).toBe(
      404,
    );

    const before = await assignments('eu-1');
    const deleted = await fleet.call(
      'DELETE',
      '/api/v1/windows/freeze-eu?reason=incident%20over',
      undefined,
      'carol',
    );
    expect(deleted.status).toBe(204);
    expect((await fleet.call('GET', '/api/v1/windows/freeze-eu')).status).toBe(404);
    const after = await assignments('eu-1');
    expect(after.etag).not.toBe(before.etag);
    expect(after.body.assignments[0]?.windows).toEqual([]);

    const recreated = await fleet.call<WindowView>('POST', '/api/v1/windows', freezeEu, 'dave');
    expect(recreated.body.version).toBe(4);
    const history = await fleet.call<WindowVersionView[]>('GET', '/api/v1/windows/freeze-eu/history');
    expect(history.body.map((v) => [v.version, v.change, v.actor, v.reason, v.window.duration])).toEqual([
      [4, 'created', 'user:dave', 'INC-1 stabilising', '1h'],
      [3, 'deleted', 'user:carol', 'incident over', '10m'],
      [2, 'updated', 'user:bob', 'shorter', '10m'],
      [1, 'created', 'user:alice', 'INC-1 stabilising', '1h'],
    ]);
    const audit = await fleet.call<{ items: AuditItem[] }>(
      'GET',
      '/api/v1/audit?action=window.&scope=window:freeze-eu',
    );
    expect(audit.body.items.map((e) => [e.action, e.actor, e.details['version']])).toEqual([
      ['window.created', 'user:dave', 4],
      ['window.deleted', 'user:carol', 3],
      ['window.updated', 'user:bob', 2],
      ['window.created', 'user:alice', 1],
    ]);
    expect((await fleet.call<WindowView[]>('GET', '/api/v1/windows')).body.map((w) => w.name)).toEqual([
      'freeze-eu',
    ]);
  });
});
