import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { TARGET_REASON_CODES, type AssignmentsResponse } from '@flotilla/contract';
import { AuditChainMonitor } from '../audit/audit-chain-monitor.service.js';
import { Database } from '../db/database.js';
import { startTwoClusterFleet, type TwoClusterFleet } from '../testing/two-cluster-fleet.js';

const observability = (file: string) =>
  readFileSync(fileURLToPath(new URL(`../../../../deploy/observability/${file}`, import.meta.url)), 'utf8');

/** `name{labels} value` lines of one metric, as [labels, value]. */
function series(text: string, name: string): [string, number][] {
  return text
    .split('\n')
    .filter((l) => l.startsWith(`${name}{`) || l.startsWith(`${name} `))
    .map((l) => {
      const at = l.lastIndexOf(' ');
      return [l.slice(name.length, at), Number(l.slice(at + 1))];
    });
}

/** The fleet's gauges on a real hub (PostgreSQL, Redis, Git), and the shipped dashboard and alerts. */
describe('fleet metrics and deploy/observability', () => {
  let fleet: TwoClusterFleet;
  const scrape = () => fetch(`${fleet.hub.url}/metrics`).then((r) => r.text());

  beforeAll(async () => {
    // Reasons counted at every scrape, so each scrape shows the change just made.
    fleet = await startTwoClusterFleet({
      CLUSTER_OFFLINE_SECONDS: '60',
      METRICS_REASONS_MAX_AGE_SECONDS: '0',
    });
  }, 120_000);
  afterAll(() => fleet?.close());

  it('shows each target with its status, each cluster with its agent, and follows a sync', async () => {
    // eu-1's agent polls (so it is seen) and reports its sync; us-1's agent registered and stays quiet.
    const [a] = (await fleet.agent<AssignmentsResponse>('eu-1', 'GET', '/api/agent/v1/assignments')).body
      .assignments;
    const before = await scrape();
    expect(series(before, 'flotilla_target_info')).toEqual(
      expect.arrayContaining([
        [expect.stringContaining('target="web-eu-1"'), 1],
        [expect.stringContaining('sync_status="Unknown"'), 1],
      ]),
    );
    const at = new Date().toISOString();
    const report = {
      targetId: a!.targetId,
      at,
      id: randomUUID(),
      type: 'sync',
      revision: a!.revision,
      bundleDigest: a!.bundleDigest,
      trigger: 'auto',
      outcome: 'Succeeded',
      startedAt: at,
      finishedAt: at,
    };
    expect((await fleet.agent('eu-1', 'POST', '/api/agent/v1/reports', { reports: [report] })).status).toBe(
      200,
    );
    await expect
      .poll(
        async () => series(await scrape(), 'flotilla_target_info').find(([l]) => l.includes('web-eu-1'))?.[0],
      )
      .toContain('sync_status="Synced"');
    const after = await scrape();
    const eu1 = series(after, 'flotilla_target_info').find(([l]) => l.includes('"web-eu-1"'))![0];
    expect(eu1).toContain('appset="web"');
    expect(eu1).toContain('cluster="eu-1"');
    expect(eu1).toContain('project="default"');
    expect(
      series(after, 'flotilla_target_out_of_sync_seconds').find(([l]) => l.includes('web-eu-1'))?.[1],
    ).toBe(0);
    expect(series(after, 'flotilla_targets')).toEqual(
      expect.arrayContaining([[expect.stringContaining('sync_status="Synced"'), 1]]),
    );
    expect(series(after, 'flotilla_cluster_connected')).toEqual(
      expect.arrayContaining([
        ['{cluster="eu-1"}', 1],
        ['{cluster="us-1"}', 1],
      ]),
    );
    const seen = series(after, 'flotilla_cluster_last_seen_timestamp_seconds').find(([l]) =>
      l.includes('eu-1'),
    );
    expect(seen?.[1]).toBeGreaterThan(Date.now() / 1000 - 120);
  });

  it('reports the audit chain valid, and 0 once an event is edited behind the hub', async () => {
    const monitor = fleet.hub.app.get(AuditChainMonitor);
    expect(await monitor.verifyNew()).toBe(true);
    expect(series(await scrape(), 'flotilla_audit_chain_valid')).toEqual([['', 1]]);
    expect(series(await scrape(), 'flotilla_audit_chain_verified_events')[0]?.[1]).toBeGreaterThan(0);
    // A new event, then edited in the database before the monitor reaches it.
    expect((await fleet.call('POST', '/api/v1/clusters', { name: 'ap-1' })).status).toBe(201);
    const prisma = fleet.hub.app.get(Database).prisma;
    const newest = await prisma.auditEvent.findFirstOrThrow({ orderBy: { id: 'desc' } });
    await prisma.$executeRaw`UPDATE "AuditEvent" SET actor = 'someone-else' WHERE id = ${newest.id}`;
    expect(await monitor.verifyNew()).toBe(false);
    expect(series(await scrape(), 'flotilla_audit_chain_valid')).toEqual([['', 0]]);
  });

  it('counts targets by their one current reason, as the targets list gives it, every code present', async () => {
    const reasonOf = async (cluster: string) =>
      (
        await fleet.call<{ name: string; reason: { code: string; window?: string } | null }[]>(
          'GET',
          `/api/v1/targets?cluster=${cluster}`,
        )
      ).body[0]?.reason;
    const byReason = async () => new Map(series(await scrape(), 'flotilla_targets_by_reason'));
    // us-1's agent never reported (sync Unknown): a deny window over it holds it. eu-1 gets a pin.
    const window = await fleet.call('POST', '/api/v1/windows', {
      name: 'freeze-us',
      kind: 'deny',
      schedule: '* * * * *',
      duration: '1h',
      clusters: ['us-*'],
      reason: 'INC-9 stabilising',
    });
    expect(window.status).toBe(201);
    const pin = await fleet.call('POST', '/api/v1/targets/web-eu-1/pin', {
      revision: 'main',
      reason: 'hold eu-1 while INC-9 is open',
    });
    expect(pin.status).toBe(200);

    expect(await reasonOf('us-1')).toMatchObject({ code: 'WindowClosed', window: 'freeze-us' });
    expect(await reasonOf('eu-1')).toMatchObject({ code: 'Pinned' });
    const held = await byReason();
    expect([...held.keys()]).toEqual(TARGET_REASON_CODES.map((code) => `{reason="${code}"}`));
    expect(held.get('{reason="WindowClosed"}')).toBe(1);
    expect(held.get('{reason="Pinned"}')).toBe(1);
    expect([...held.values()].reduce((a, b) => a + b)).toBe(2);

    expect((await fleet.call('DELETE', '/api/v1/windows/freeze-us?reason=done')).status).toBe(204);
    expect((await fleet.call('DELETE', '/api/v1/targets/web-eu-1/pin', { reason: 'done' })).status).toBe(204);
    expect((await reasonOf('us-1'))?.code).not.toBe('WindowClosed');
    const released = await byReason();
    expect(released.get('{reason="WindowClosed"}')).toBe(0);
    expect(released.get('{reason="Pinned"}')).toBe(0);
  });

  it('the dashboard and the alert rules use only metrics the hub serves', async () => {
    const text = await scrape();
    const served = new Set([...text.matchAll(/^# TYPE (\S+) (\w+)$/gm)].map((m) => m[1]!));
    const used = (expr: string) =>
      [...expr.matchAll(/\bflotilla_[a-z_]+\b/g)].map((m) => m[0].replace(/_(bucket|sum|count)$/, ''));
    const rules = parse(observability('prometheus-rules.yaml')) as {
      groups: { rules: { alert: string; expr: string }[] }[];
    };
    const dashboard = JSON.parse(observability('grafana-dashboard.json')) as {
      panels: { title: string; targets: { expr: string }[] }[];
    };
    const uses = [
      ...rules.groups.flatMap((g) => g.rules.map((r) => ({ where: `alert ${r.alert}`, expr: r.expr }))),
      ...dashboard.panels.flatMap((p) => p.targets.map((t) => ({ where: `panel ${p.title}`, expr: t.expr }))),
    ];
    expect(uses.length).toBeGreaterThan(15);
    const missing = uses.flatMap(({ where, expr }) =>
      used(expr)
        .filter((m) => !served.has(m))
        .map((m) => `${where}: ${m}`),
    );
    expect(uses.every(({ expr }) => used(expr).length > 0)).toBe(true);
    expect(missing).toEqual([]);
  });
});
