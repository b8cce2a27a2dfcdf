import 'reflect-metadata';
import { randomUUID } from 'node:crypto';
import type {
  AssignmentsResponse,
  BreakGlassRecordView,
  BreakGlassView,
  DriftReport,
} from '@flotilla/contract';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTwoClusterFleet, type TwoClusterFleet } from '../testing/two-cluster-fleet.js';

// Break-glass on the real hub (PostgreSQL, Redis, Git), the agents' side spoken by hand over the
// agent protocol: validation, scopes in assignments (waking the long-poll), the manual changes
// agents report under an override, close and expiry, all audited.

let fleet: TwoClusterFleet;

const assignments = (cluster: 'eu-1' | 'us-1', headers: Record<string, string> = {}, wait = 0) =>
  fleet.agent<AssignmentsResponse>(
    cluster,
    'GET',
    `/api/agent/v1/assignments?wait=${wait}`,
    undefined,
    headers,
  );

async function overridesOf(cluster: 'eu-1' | 'us-1'): Promise<string[]> {
  return (await assignments(cluster)).body.assignments.flatMap((a) => a.breakGlass.map((b) => b.id));
}

interface AuditItem {
  actor: string;
  action: string;
  scope: string;
  details: Record<string, unknown>;
}

const incident = {
  scope: 'cluster',
  name: 'eu-1',
  reason: 'INC-7: scale by hand while the database recovers',
  durationMinutes: 30,
  pauseSelfHeal: true,
};

describe('break-glass at the hub', () => {
  beforeAll(async () => {
    fleet = await startTwoClusterFleet({ BREAK_GLASS_MAX_MINUTES: '120' });
  }, 180_000);
  afterAll(async () => {
    await fleet?.close();
  }, 60_000);

  it('refuses a bad override with the offending field and opens nothing', async () => {
    const inOneHour = new Date(Date.now() + 3_600_000).toISOString();
    const cases: [Record<string, unknown>, number, string][] = [
      [{ ...incident, reason: '  ' }, 400, 'reason'],
      [{ ...incident, scope: 'namespace' }, 400, 'scope'],
      [{ ...incident, expiresAt: inOneHour }, 400, 'durationMinutes'],
      [{ ...incident, durationMinutes: 121 }, 400, 'durationMinutes'],
      [{ ...incident, durationMinutes: undefined, expiresAt: '2020-01-01T00:00:00Z' }, 400, 'expiresAt'],
      [{ ...incident, pauseSelfHeal: false }, 400, 'allowSyncOutsideWindows'],
      [{ ...incident, name: 'mars-1' }, 404, 'name'],
      [{ ...incident, scope: 'target', name: 'web-mars-1' }, 404, 'name'],
      [{ ...incident, ttl: 5 }, 400, '(root)'],
    ];
    for (const [body, status, path] of cases) {
      const r = await fleet.call<{ path: string; message: string }>('POST', '/api/v1/break-glass', body);
      expect({ status: r.status, path: r.body.path }).toEqual({ status, path });
    }
    expect((await fleet.call('GET', '/api/v1/break-glass')).body).toEqual([]);
    expect(await overridesOf('eu-1')).toEqual([]);
    const audit = await fleet.call<{ items: AuditItem[] }>('GET', '/api/v1/audit?action=break-glass.');
    expect(audit.body.items).toEqual([]);
  });

  it('opens on a cluster: its agent is woken and its targets carry the override, others do not', async () => {
    const before = await assignments('eu-1');
    const waiting = assignments('eu-1', { 'if-none-match': before.etag ?? '' }, 30);
    const opened = await fleet.call<BreakGlassView>('POST', '/api/v1/break-glass', incident, 'alice');
    expect(opened.status).toBe(201);
    expect(opened.body).toMatchObject({
      id: 1,
      scope: 'cluster',
      name: 'eu-1',
      state: 'active',
      openedBy: 'user:alice',
      pauseSelfHeal: true,
      allowSyncOutsideWindows: false,
      manualChanges: 0,
    });
    const woken = await waiting;
    expect(woken.status).toBe(200);
    expect(woken.body.assignments[0]?.breakGlass).toEqual([
      {
        id: '1',
        reason: incident.reason,
        expiresAt: opened.body.expiresAt,
        allowSyncOutsideWindows: false,
        pauseSelfHeal: true,
      },
    ]);
    expect(await overridesOf('us-1')).toEqual([]);
  }, 60_000);

  it('records every manual change an agent reports under the override, once', async () => {
    const [a] = (await assignments('eu-1')).body.assignments;
    const drift = (state: DriftReport['state'], breakGlassId?: string): DriftReport => ({
      type: 'drift',
      id: randomUUID(),
      targetId: a?.targetId ?? '',
      at: new Date().toISOString(),
      state,
      resource: { group: '', kind: 'ConfigMap', namespace: 'web', name: 'web-config' },
      paths: ['/data/owner'],
      manager: 'kubectl-edit',
      ...(breakGlassId && { breakGlassId }),
    });
    const tolerated = drift('tolerated', '1');
    const batch = { reports: [drift('detected'), tolerated, drift('tolerated', '999')] };
    expect((await fleet.agent('eu-1', 'POST', '/api/agent/v1/reports', batch)).body).toEqual({
      accepted: 3,
      duplicates: 0,
    });
    // Another cluster's agent cannot attach to eu-1's break-glass, whatever id it names.
    const [u] = (await assignments('us-1')).body.assignments;
    const foreign = { ...drift('tolerated', '1'), targetId: u?.targetId ?? '' };
    expect((await fleet.agent('us-1', 'POST', '/api/agent/v1/reports', { reports: [foreign] })).body).toEqual(
      {
        accepted: 1,
        duplicates: 0,
      },
    );
    // A replay changes nothing.
    const replay = await fleet.agent('eu-1', 'POST', '/api/agent/v1/reports', { reports: [tolerated] });
    expect(replay.body).toEqual({ accepted: 0, duplicates: 1 });

    const record = await fleet.call<BreakGlassRecordView>('GET', '/api/v1/break-glass/1/record');
    expect(record.body.breakGlass.manualChanges).toBe(1);
    expect(record.body.changes).toEqual([
      {
        summary: 'manual change under break-glass #1',
        target: 'web-eu-1',
        cluster: 'eu-1',
        resource: tolerated.resource,
        paths: ['/data/owner'],
        manager: 'kubectl-edit',
        state: 'tolerated',
        at: tolerated.at,
      },
    ]);
  });

  it('closes by hand: the override leaves the assignment, a second close is refused, all audited', async () => {
    const before = await assignments('eu-1');
    const closed = await fleet.call<BreakGlassView>(
      'POST',
      '/api/v1/break-glass/1/close',
      { reason: 'database recovered' },
      'bob',
    );
    expect(closed.status).toBe(200);
    expect(closed.body).toMatchObject({
      state: 'closed',
      closedBy: 'user:bob',
      closeReason: 'database recovered',
    });
    const after = await assignments('eu-1');
    expect(after.etag).not.toBe(before.etag);
    expect(after.body.assignments[0]?.breakGlass).toEqual([]);
    expect((await fleet.call('POST', '/api/v1/break-glass/1/close', {})).status).toBe(409);
    // A closed break-glass takes no more changes, even from the cluster it covered.
    const [a] = after.body.assignments;
    const late: DriftReport = {
      type: 'drift',
      id: randomUUID(),
      targetId: a?.targetId ?? '',
      at: new Date().toISOString(),
      state: 'tolerated',
      resource: { group: '', kind: 'ConfigMap', namespace: 'web', name: 'web-config' },
      paths: ['/data/late'],
      breakGlassId: '1',
    };
    expect((await fleet.agent('eu-1', 'POST', '/api/agent/v1/reports', { reports: [late] })).status).toBe(
      200,
    );
    expect(
      (await fleet.call<BreakGlassRecordView>('GET', '/api/v1/break-glass/1/record')).body.changes.map(
        (c) => c.paths,
      ),
    ).toEqual([['/data/owner']]);
    expect((await fleet.call('POST', '/api/v1/break-glass/42/close', {})).status).toBe(404);
    expect((await fleet.call('GET', '/api/v1/break-glass/x1')).status).toBe(400);

    const audit = await fleet.call<{ items: AuditItem[] }>('GET', '/api/v1/audit?action=break-glass.');
    expect(
      audit.body.items.map((e) => [e.action, e.actor, e.scope, e.details['manualChanges'] ?? null]),
    ).toEqual([
      ['break-glass.closed', 'user:bob', 'cluster:eu-1', 1],
      ['break-glass.opened', 'user:alice', 'cluster:eu-1', null],
    ]);
  });

  it('scopes an override to one target or one appset', async () => {
    const target = await fleet.call<BreakGlassView>('POST', '/api/v1/break-glass', {
      scope: 'target',
      name: 'web-us-1',
      reason: 'INC-8',
      durationMinutes: 10,
      allowSyncOutsideWindows: true,
    });
    expect(target.status).toBe(201);
    expect([await overridesOf('eu-1'), await overridesOf('us-1')]).toEqual([[], [String(target.body.id)]]);
    const appset = await fleet.call<BreakGlassView>('POST', '/api/v1/break-glass', {
      scope: 'appset',
      name: 'web',
      reason: 'INC-9',
      durationMinutes: 10,
      pauseSelfHeal: true,
    });
    expect([await overridesOf('eu-1'), await overridesOf('us-1')]).toEqual([
      [String(appset.body.id)],
      [String(target.body.id), String(appset.body.id)],
    ]);
    const active = await fleet.call<BreakGlassView[]>('GET', '/api/v1/break-glass?state=active');
    expect(active.body.map((b) => b.id)).toEqual([appset.body.id, target.body.id]);
    for (const b of active.body) await fleet.call('POST', `/api/v1/break-glass/${b.id}/close`, {});
  });

  it('expires on its own: gone from the assignment, recorded as expired in the audit log', async () => {
    const opened = await fleet.call<BreakGlassView>('POST', '/api/v1/break-glass', {
      ...incident,
      durationMinutes: undefined,
      expiresAt: new Date(Date.now() + 2_000).toISOString(),
    });
    expect(opened.status).toBe(201);
    expect(await overridesOf('eu-1')).toEqual([String(opened.body.id)]);
    await expect
      .poll(
        async () =>
          (await fleet.call<BreakGlassView>('GET', `/api/v1/break-glass/${opened.body.id}`)).body.state,
        {
          timeout: 20_000,
          interval: 250,
        },
      )
      .toBe('expired');
    expect(await overridesOf('eu-1')).toEqual([]);
    await expect
      .poll(
        async () =>
          (
            await fleet.call<{ items: AuditItem[] }>('GET', '/api/v1/audit?action=break-glass.expired')
          ).body.items.map((e) => [e.actor, e.scope, e.details['breakGlassId']]),
        { timeout: 20_000, interval: 250 },
      )
      .toEqual([['system:break-glass-expiry', 'cluster:eu-1', opened.body.id]]);
    const view = (await fleet.call<BreakGlassView>('GET', `/api/v1/break-glass/${opened.body.id}`)).body;
    expect(view.closedAt).toBe(opened.body.expiresAt);
  }, 60_000);
});
