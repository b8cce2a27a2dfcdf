import 'reflect-metadata';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Database } from '../db/database.js';
import { startTestHub, type TestHub } from '../testing/test-hub.js';

/** The `reason="AgentOffline"` value of one scrape. */
function agentOffline(text: string): number | undefined {
  const line = text
    .split('\n')
    .find((l) => l.startsWith('flotilla_targets_by_reason{reason="AgentOffline"}'));
  return line === undefined ? undefined : Number(line.slice(line.lastIndexOf(' ') + 1));
}

/** A target row of the appset `web` on a cluster, with what this spec varies. */
const targetRow = (name: string, appSetId: string, clusterId: string, extra: object = {}) => ({
  name,
  appSetId,
  clusterId,
  namespace: 'web',
  repoUrl: 'https://example.com/apps.git',
  sourcePath: 'app',
  targetRevision: 'main',
  desiredRevision: 'a'.repeat(40),
  syncPolicy: {},
  ...extra,
});

/**
 * flotilla_targets_by_reason over more targets than one round weighs, on the real hub (PostgreSQL,
 * Redis): every target counted once across rounds, and one count shared by the scrapes of its
 * lifetime (METRICS_REASONS_MAX_AGE_SECONDS, here an hour so that no clock decides the outcome).
 */
describe('flotilla_targets_by_reason over a large fleet', () => {
  let hub: TestHub;
  let addTargets: (from: number, count: number) => Promise<void>;
  const scrape = () => fetch(`${hub.url}/metrics`).then((r) => r.text());

  beforeAll(async () => {
    hub = await startTestHub({ METRICS_REASONS_MAX_AGE_SECONDS: '3600' });
    const prisma = hub.app.get(Database).prisma;
    // A cluster whose agent never called: each of its targets is AgentOffline.
    const cluster = await prisma.cluster.create({ data: { name: 'edge-1' } });
    const appSet = await prisma.applicationSet.create({
      data: { name: 'web', apiVersion: 'flotilla.dev/v1alpha1', spec: {} },
    });
    addTargets = async (from, count) => {
      await prisma.target.createMany({
        data: Array.from({ length: count }, (_, i) => targetRow(`web-${from + i}`, appSet.id, cluster.id)),
      });
    };
    await addTargets(0, 1001);
  }, 120_000);
  afterAll(() => hub?.close());

  it('counts every target once across rounds, and answers scrapes with that count for its lifetime', async () => {
    // Two scrapes at once: one count, both served from it.
    const [a, b] = await Promise.all([scrape(), scrape()]);
    expect(agentOffline(a)).toBe(1001);
    expect(agentOffline(b)).toBe(1001);
    await addTargets(1001, 5);
    expect(agentOffline(await scrape())).toBe(1001);
  });

  it("weighs each target's latest sync run only: a failure retried with success is no SyncFailed", async () => {
    const prisma = hub.app.get(Database).prisma;
    const cluster = await prisma.cluster.create({ data: { name: 'eu-1', lastSeenAt: new Date() } });
    const appSet = await prisma.applicationSet.findUniqueOrThrow({ where: { name: 'web' } });
    const t0 = Date.parse('2026-03-01T00:00:00.000Z');
    for (const [name, outcomes] of [
      ['recovered-eu-1', ['Failed', 'Succeeded']],
      ['broken-eu-1', ['Succeeded', 'Failed']],
    ] as const) {
      const target = await prisma.target.create({
        data: targetRow(name, appSet.id, cluster.id, {
          desiredRevision: 'b'.repeat(40),
          // Synced an older revision: OutOfSync, so a failed run is what holds it.
          lastSyncedRevision: 'a'.repeat(40),
          lastSyncedAt: new Date(t0),
        }),
      });
      await prisma.syncRun.createMany({
        data: outcomes.map((outcome, i) => ({
          targetId: target.id,
          clusterId: cluster.id,
          revision: 'b'.repeat(40),
          bundleDigest: 'sha256:0',
          trigger: 'auto',
          outcome,
          message: outcome === 'Failed' ? 'apply Deployment web: field is immutable' : '',
          startedAt: new Date(t0 + i * 60_000),
          finishedAt: new Date(t0 + i * 60_000),
          agentReportId: `${name}-${i}`,
        })),
      });
    }
    const res = await fetch(`${hub.url}/api/v1/targets?cluster=eu-1`);
    const reasons = Object.fromEntries(
      ((await res.json()) as { name: string; reason: { code: string; message: string } | null }[]).map(
        (t) => [t.name, t.reason],
      ),
    );
    expect(reasons['broken-eu-1']).toEqual({
      code: 'SyncFailed',
      message: 'apply Deployment web: field is immutable',
    });
    expect(reasons['recovered-eu-1']?.code).not.toBe('SyncFailed');
  });
});
