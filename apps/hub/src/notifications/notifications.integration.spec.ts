import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AssignmentsResponse } from '@flotilla/contract';
import { startTwoClusterFleet, type TwoClusterFleet } from '../testing/two-cluster-fleet.js';
import {
  startTestNotificationReceiver,
  type TestNotificationReceiver,
} from '../testing/test-notification-receiver.js';
import { Database } from '../db/database.js';

interface DeliveryView {
  id: string;
  policy: string;
  trigger: string;
  destination: string;
  status: string;
  eventCount: number;
  attempts: number;
  lastError: string | null;
}

const SECRET = 'a-shared-hmac-secret-of-the-team';

/**
 * Notifications end to end on the real hub (PostgreSQL, Redis, Git) with real HTTP receivers on
 * 127.0.0.1 that verify the HMAC: the agents' reports are the events, spoken by hand.
 */
describe('notifications (PostgreSQL, Redis, HTTP receivers)', () => {
  let fleet: TwoClusterFleet;
  let good: TestNotificationReceiver;
  let flaky: TestNotificationReceiver;
  let hanging: TestNotificationReceiver;

  const deliveries = async (query = '') =>
    (await fleet.call<DeliveryView[]>('GET', `/api/v1/notifications/deliveries${query}`)).body;
  const report = async (cluster: 'eu-1' | 'us-1', fields: Record<string, unknown>) => {
    const [a] = (await fleet.agent<AssignmentsResponse>(cluster, 'GET', '/api/agent/v1/assignments')).body
      .assignments;
    const at = new Date().toISOString();
    const r = {
      targetId: a?.targetId,
      at,
      id: randomUUID(),
      type: 'sync',
      revision: a?.revision,
      bundleDigest: a?.bundleDigest,
      trigger: 'auto',
      outcome: 'Succeeded',
      startedAt: at,
      finishedAt: at,
      ...fields,
    };
    expect((await fleet.agent(cluster, 'POST', '/api/agent/v1/reports', { reports: [r] })).status).toBe(200);
  };
  const destination = async (name: string, receiver: TestNotificationReceiver) =>
    fleet.call('POST', '/api/v1/notifications/destinations', {
      name,
      type: 'webhook',
      url: receiver.url,
      secret: SECRET,
    });
  const policy = (name: string, spec: Record<string, unknown>) =>
    fleet.call<{ code: string; path: string; message: string }>('POST', '/api/v1/notifications/policies', {
      apiVersion: 'flotilla.dev/v1alpha1',
      kind: 'NotificationPolicy',
      metadata: { name },
      spec,
    });

  beforeAll(async () => {
    [good, flaky, hanging] = await Promise.all([
      startTestNotificationReceiver(SECRET, 'ok'),
      startTestNotificationReceiver(SECRET, 'fail-first'),
      startTestNotificationReceiver(SECRET, 'hang'),
    ]);
    fleet = await startTwoClusterFleet({
      FLOTILLA_SECRETS_KEY: 'ab'.repeat(32),
      NOTIFY_TIMEOUT_SECONDS: '1',
      CLUSTER_OFFLINE_SECONDS: '3',
    });
  }, 120_000);
  afterAll(async () => {
    await fleet?.close();
    await Promise.all([good?.close(), flaky?.close(), hanging?.close()]);
  });

  it('stores a destination with its secret sealed, never shown; bad input names the field', async () => {
    const created = await destination('team', good);
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({ name: 'team', type: 'webhook', hasSecret: true });
    expect(JSON.stringify(created.body)).not.toContain(SECRET);
    const row = await fleet.hub.app
      .get(Database)
      .prisma.notificationDestination.findUniqueOrThrow({ where: { name: 'team' } });
    expect(row.sealedSecret).toMatch(/^v1:/);
    expect(row.sealedSecret).not.toContain(SECRET);

    const bad = await fleet.call<{ path: string }>('POST', '/api/v1/notifications/destinations', {
      name: 'x',
      type: 'webhook',
      url: 'ftp://example.org',
      secret: SECRET,
    });
    expect([bad.status, bad.body.path]).toEqual([400, 'url']);
    expect((await destination('flaky', flaky)).status).toBe(201);
    expect((await destination('hanging', hanging)).status).toBe(201);
  });

  it('refuses a policy with a bad template or an unknown destination, changing nothing', async () => {
    const badTemplate = await policy('broken', {
      triggers: ['sync-failed'],
      destinations: ['team'],
      template: { title: '{{ .appSet | nosuchfunction }}' },
    });
    expect([badTemplate.status, badTemplate.body.code, badTemplate.body.path]).toEqual([
      400,
      'invalid-notification-policy',
      'spec.template.title',
    ]);
    const missingField = await policy('broken', {
      triggers: ['sync-failed'],
      destinations: ['team'],
      template: { body: '{{ .nosuchfield }}' },
    });
    expect([missingField.status, missingField.body.path]).toEqual([400, 'spec.template.body']);
    const badTrigger = await policy('broken', { triggers: ['sync-exploded'], destinations: ['team'] });
    expect([badTrigger.status, badTrigger.body.path]).toEqual([400, 'spec.triggers[0]']);
    const unknown = await policy('broken', { triggers: ['sync-failed'], destinations: ['team', 'nobody'] });
    expect([unknown.status, unknown.body.code, unknown.body.path]).toEqual([
      422,
      'unknown-destination',
      'spec.destinations[1]',
    ]);
    expect((await fleet.call('GET', '/api/v1/notifications/policies/broken')).status).toBe(404);
  });

  it('digests a burst of failures into one signed message per destination; a 500 is retried, a silent receiver fails alone', async () => {
    const applied = await policy('web-failures', {
      triggers: ['sync-failed'],
      appSets: ['web'],
      destinations: ['team', 'flaky', 'hanging'],
      digestWindow: '10s',
      template: { title: '{{ .trigger }} on {{ .appSet }}: {{ .count }} target(s)' },
    });
    expect(applied.status).toBe(201);
    await report('eu-1', { outcome: 'Failed', message: 'apply failed: quota' });
    await report('us-1', { outcome: 'Failed', message: 'apply failed: quota' });

    await expect.poll(() => good.messages().length, { timeout: 30_000 }).toBe(1);
    const [message] = good.messages();
    expect(message?.signatureValid).toBe(true);
    expect(message?.event).toBe('sync-failed');
    expect(message?.body).toMatchObject({
      policy: 'web-failures',
      trigger: 'sync-failed',
      title: 'sync-failed on web: 2 target(s)',
      count: 2,
      appSet: 'web',
    });
    expect((message?.body['events'] as { target: string }[]).map((e) => e.target).sort()).toEqual([
      'web-eu-1',
      'web-us-1',
    ]);

    // 500 then 200: the message arrives once, after two attempts.
    await expect.poll(() => flaky.messages().length, { timeout: 30_000 }).toBe(1);
    expect(flaky.messages()[0]?.accepted).toBe(1);
    expect(flaky.requests()).toBe(2);
    // Never answers: retried with back-off, then Failed with why; the others were not held up.
    await expect
      .poll(async () => (await deliveries('?destination=hanging'))[0]?.status, { timeout: 60_000 })
      .toBe('Failed');
    const all = await deliveries('?policy=web-failures');
    const byDestination = Object.fromEntries(all.map((d) => [d.destination, d]));
    expect(byDestination['team']).toMatchObject({ status: 'Sent', attempts: 1, eventCount: 2 });
    expect(byDestination['flaky']).toMatchObject({ status: 'Sent', attempts: 2, lastError: null });
    expect(byDestination['hanging']).toMatchObject({ status: 'Failed', attempts: 5 });
    expect(byDestination['hanging']?.lastError).toContain('no answer within 1000 ms');
    expect(hanging.requests()).toBe(5);
    expect(good.messages()).toHaveLength(1);
  }, 120_000);

  it('tells of a deployment once per revision per target', async () => {
    await fleet.call('DELETE', '/api/v1/notifications/policies/web-failures');
    const applied = await policy('web-deployed', {
      triggers: ['deployed', 'sync-failed'],
      destinations: ['team'],
      digestWindow: '0s',
    });
    expect(applied.status).toBe(201);
    const before = good.messages().length;
    await report('eu-1', {});
    await expect.poll(() => good.messages().length, { timeout: 30_000 }).toBe(before + 1);
    expect(good.messages().at(-1)?.body).toMatchObject({ trigger: 'deployed', count: 1 });

    // The same revision synced again (a self-heal), then a failure: the failure is told, the
    // deployment not a second time. Events are matched in order, so once the failure is there, a
    // second "deployed" would be too.
    await report('eu-1', { trigger: 'self-heal' });
    await report('eu-1', { outcome: 'Failed', message: 'webhook denied' });
    await expect.poll(() => good.messages().length, { timeout: 30_000 }).toBe(before + 2);
    expect(good.messages().at(-1)?.body).toMatchObject({ trigger: 'sync-failed' });
    const deployed = await deliveries('?policy=web-deployed&trigger=deployed');
    expect(deployed).toHaveLength(1);
  }, 60_000);

  it('tells of health degraded, drift detected, healed and contested, each in its own digest', async () => {
    await fleet.call('DELETE', '/api/v1/notifications/policies/web-deployed');
    expect(
      (
        await policy('web-state', {
          triggers: ['health-degraded', 'drift-detected', 'healed', 'contested'],
          appSets: ['web'],
          destinations: ['team'],
          digestWindow: '0s',
        })
      ).status,
    ).toBe(201);
    const resource = { group: '', kind: 'ConfigMap', namespace: 'web', name: 'web-config' };
    await report('eu-1', { type: 'health', status: 'Degraded', message: 'CrashLoopBackOff' });
    await report('eu-1', { type: 'drift', state: 'detected', resource, paths: ['/data/owner'] });
    await report('eu-1', { type: 'drift', state: 'healed', resource, paths: ['/data/owner'] });
    await report('us-1', { type: 'drift', state: 'contested', resource, manager: 'kubectl-edit' });
    await expect
      .poll(async () => (await deliveries('?policy=web-state&status=Sent')).map((d) => d.trigger).sort(), {
        timeout: 30_000,
      })
      .toEqual(['contested', 'drift-detected', 'healed', 'health-degraded']);
    const told = good.messages().filter((m) => m.body['policy'] === 'web-state');
    expect(told.map((m) => m.event).sort()).toEqual([
      'contested',
      'drift-detected',
      'healed',
      'health-degraded',
    ]);
    const degraded = told.find((m) => m.event === 'health-degraded');
    expect((degraded?.body['events'] as { message: string; cluster: string }[])[0]).toMatchObject({
      cluster: 'eu-1',
      message: 'Degraded: CrashLoopBackOff',
    });
  }, 60_000);

  it('tells of break-glass opened and closed, with its manual changes', async () => {
    expect(
      (
        await policy('incidents', {
          triggers: ['break-glass-opened', 'break-glass-closed', 'break-glass-expired'],
          destinations: ['team'],
        })
      ).status,
    ).toBe(201);
    const opened = await fleet.call<{ id: number }>('POST', '/api/v1/break-glass', {
      scope: 'cluster',
      name: 'eu-1',
      reason: 'incident 7',
      durationMinutes: 30,
      pauseSelfHeal: true,
    });
    expect(opened.status).toBe(201);
    expect(
      (await fleet.call('POST', `/api/v1/break-glass/${opened.body.id}/close`, { reason: 'resolved' }))
        .status,
    ).toBe(200);
    await expect
      .poll(
        () =>
          good
            .messages()
            .filter((m) => m.body['policy'] === 'incidents')
            .map((m) => m.event),
        {
          timeout: 30_000,
        },
      )
      .toEqual(['break-glass-opened', 'break-glass-closed']);
    const [open] = good.messages().filter((m) => m.event === 'break-glass-opened');
    expect(String(open?.body['text'])).toContain('incident 7');
  }, 60_000);

  it('tells of a break-glass that expired, with the count of manual changes made under it', async () => {
    // The incidents policy (above) hears break-glass-expired too.
    const opened = await fleet.call<{ id: number }>('POST', '/api/v1/break-glass', {
      scope: 'cluster',
      name: 'us-1',
      reason: 'incident 8',
      durationMinutes: 30,
      pauseSelfHeal: true,
    });
    expect(opened.status).toBe(201);
    // Two hands-on edits under the override, as us-1's agent reports them (self-heal paused).
    for (const name of ['web-config', 'web-secret-ref'])
      await report('us-1', {
        type: 'drift',
        state: 'tolerated',
        resource: { group: '', kind: 'ConfigMap', namespace: 'web', name },
        paths: ['/data/owner'],
        manager: 'kubectl-edit',
        breakGlassId: String(opened.body.id),
      });
    // Its time runs out (moved, not waited for: the reports above must land while it is open).
    await fleet.hub.app
      .get(Database)
      .prisma.breakGlass.update({ where: { id: opened.body.id }, data: { expiresAt: new Date() } });
    const expired = () => good.messages().filter((m) => m.event === 'break-glass-expired');
    await expect.poll(() => expired().length, { timeout: 30_000 }).toBe(1);
    expect(String(expired()[0]?.body['text'])).toContain(
      'break-glass on cluster us-1 expired; 2 manual change(s) recorded',
    );
  }, 60_000);

  it('tells of a sync asked (running), a held revision once per target and revision, and a success', async () => {
    expect(
      (
        await policy('held-and-running', {
          triggers: ['window-held', 'sync-running', 'sync-succeeded'],
          appSets: ['web'],
          destinations: ['team'],
          digestWindow: '0s',
        })
      ).status,
    ).toBe(201);
    // The agent reports a held sync once per bundle; a second one (an agent restarted) is not told.
    await report('us-1', { outcome: 'Blocked', message: 'blocked by window freeze' });
    await report('us-1', { outcome: 'Blocked', message: 'blocked by window freeze' });
    const asked = await fleet.call('POST', '/api/v1/targets/web-us-1/sync', { reason: 'hotfix 12' }, 'ann');
    expect(asked.status).toBe(202);
    await report('us-1', { trigger: 'manual' });
    await expect
      .poll(
        async () => (await deliveries('?policy=held-and-running&status=Sent')).map((d) => d.trigger).sort(),
        { timeout: 30_000 },
      )
      .toEqual(['sync-running', 'sync-succeeded', 'window-held']);
    const told = good.messages().filter((m) => m.body['policy'] === 'held-and-running');
    expect(told.map((m) => m.event).sort()).toEqual(['sync-running', 'sync-succeeded', 'window-held']);
    expect(String(told.find((m) => m.event === 'window-held')?.body['text'])).toContain(
      'held: blocked by window freeze',
    );
    expect(String(told.find((m) => m.event === 'sync-running')?.body['text'])).toContain('hotfix 12');
    await fleet.call('DELETE', '/api/v1/notifications/policies/held-and-running');
  }, 60_000);

  it('tells once that an agent went quiet', async () => {
    expect(
      (await policy('offline', { triggers: ['agent-offline'], destinations: ['team'], clusterSelector: {} }))
        .status,
    ).toBe(201);
    // A new cluster whose agent registers, polls once and goes quiet (CLUSTER_OFFLINE_SECONDS is 3;
    // lastSeenAt is written on its first poll).
    const created = await fleet.call<{ bootstrapToken: string }>('POST', '/api/v1/clusters', {
      name: 'ap-1',
    });
    const registered = await fleet.call<{ credential: string }>('POST', '/api/agent/v1/register', {
      clusterName: 'ap-1',
      bootstrapToken: created.body.bootstrapToken,
    });
    const polled = await fetch(`${fleet.hub.url}/api/agent/v1/assignments`, {
      headers: { authorization: `Bearer ${registered.body.credential}` },
    });
    expect(polled.status).toBe(200);
    const toldOf = (cluster: string) =>
      good
        .messages()
        .filter(
          (m) =>
            m.event === 'agent-offline' &&
            (m.body['events'] as { cluster: string }[])[0]?.cluster === cluster,
        );
    await expect.poll(() => toldOf('ap-1').length, { timeout: 30_000 }).toBe(1);
    expect(toldOf('ap-1')[0]?.body['text']).toContain('the agent of cluster ap-1 has not been seen since');
  }, 60_000);
});
