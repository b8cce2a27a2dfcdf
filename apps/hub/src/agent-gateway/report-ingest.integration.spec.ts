import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Report } from '@flotilla/contract';
import { AuditLog } from '../audit/audit.service.js';
import type { Database } from '../db/database.js';
import { HubMetrics } from '../metrics/hub-metrics.service.js';
import { createTestPostgres, openTestDatabase, type TestPostgres } from '../testing/test-database.js';
import { ReportIngestService } from './report-ingest.service.js';

// Two hub replicas (two connection pools) on one real PostgreSQL, receiving overlapping batches at
// the same time — an agent's retry racing its original. Every report must land exactly once, with
// one sync run and one audit event, and the audit chain must still verify.
describe('report ingest on PostgreSQL, two replicas at once', () => {
  let pg: TestPostgres;
  let replicas: { db: Database; ingest: ReportIngestService }[] = [];
  const clusters: { id: string; targets: string[] }[] = [];

  beforeAll(async () => {
    pg = await createTestPostgres();
    for (let i = 0; i < 2; i++) {
      const db = await openTestDatabase(pg.url);
      replicas.push({ db, ingest: new ReportIngestService(db, new AuditLog(db), new HubMetrics(db)) });
    }
    const { db } = replicas[0]!;
    const appSet = await db.prisma.applicationSet.create({
      data: { name: 'web', apiVersion: 'flotilla.dev/v1alpha1', spec: {} },
    });
    for (let c = 0; c < 4; c++) {
      const cluster = await db.prisma.cluster.create({ data: { name: `c${c}` } });
      const targets: string[] = [];
      for (let a = 0; a < 5; a++) {
        const t = await db.prisma.target.create({
          data: {
            name: `web-${a}-c${c}`,
            appSetId: appSet.id,
            clusterId: cluster.id,
            namespace: 'web',
            repoUrl: 'file:///repo',
            sourcePath: `apps/${a}`,
            targetRevision: 'main',
            desiredRevision: 'c2',
            bundleDigest: 'sha256:d2',
            syncPolicy: {},
          },
        });
        targets.push(t.id);
      }
      clusters.push({ id: cluster.id, targets });
    }
  });

  afterAll(async () => {
    await Promise.all(replicas.map((r) => r.db.close()));
    replicas = [];
    await pg?.drop();
  });

  const sync = (id: string, targetId: string, at: string): Report => ({
    id,
    type: 'sync',
    targetId,
    at,
    revision: 'c2',
    bundleDigest: 'sha256:d2',
    trigger: 'auto',
    outcome: 'Succeeded',
    startedAt: at,
    finishedAt: at,
    message: '',
    resources: [],
  });

  it('stores each report once when replicas ingest overlapping batches concurrently', async () => {
    // Per cluster: reports 0..29 (6 per target), sent as batch A = 0..19 to one replica and batch
    // B = 10..29 (10..19 reversed, to try the other lock order) to the other, both at once.
    const work: Promise<{ accepted: number; duplicates: number }>[] = [];
    for (const c of clusters) {
      const reports = Array.from({ length: 30 }, (_, i) =>
        sync(
          `${c.id}-r${String(i).padStart(2, '0')}`,
          c.targets[i % 5]!,
          `2026-01-01T00:00:${String(i).padStart(2, '0')}.000Z`,
        ),
      );
      const a = reports.slice(0, 20);
      const b = [...reports.slice(10, 20).reverse(), ...reports.slice(20)];
      work.push(replicas[0]!.ingest.ingestBatch(c.id, a), replicas[1]!.ingest.ingestBatch(c.id, b));
    }
    const results = await Promise.all(work);
    const accepted = results.reduce((n, r) => n + r.accepted, 0);
    const duplicates = results.reduce((n, r) => n + r.duplicates, 0);
    expect([accepted, duplicates]).toEqual([4 * 30, 4 * 10]);

    const { db } = replicas[0]!;
    expect(await db.prisma.processedReport.count()).toBe(120);
    expect(await db.prisma.syncRun.count()).toBe(120);
    expect(await db.prisma.auditEvent.count({ where: { action: 'sync.succeeded' } })).toBe(120);
    expect(await new AuditLog(db).verify()).toMatchObject({ valid: true, checked: 120, unchained: 0 });
    const t = await db.prisma.target.findUniqueOrThrow({ where: { id: clusters[0]!.targets[0]! } });
    expect(t.lastSyncedRevision).toBe('c2');
    expect(t.lastReportAt).not.toBeNull();
  });

  const health = (id: string, targetId: string, at: string, status: string): Report => ({
    id,
    type: 'health',
    targetId,
    at,
    status: status as 'Healthy',
    message: status,
    resources: [],
  });

  it('never moves a target back to an older report, whichever batch commits last', async () => {
    // Cluster c1's five targets: the agent saw each Degraded at 00:01 and Healthy at 00:02. The
    // newer batch reaches one replica and commits first; the older one (a retry, another replica)
    // commits after it, and must change nothing but the record.
    const { id: clusterId, targets } = clusters[1]!;
    const newer = targets.map((t, i) => health(`h-new-${i}`, t, '2026-01-02T00:02:00.000Z', 'Healthy'));
    const older = targets.map((t, i) => health(`h-old-${i}`, t, '2026-01-02T00:01:00.000Z', 'Degraded'));
    const runOld = sync('s-old', targets[0]!, '2026-01-02T00:01:00.000Z');
    const runNew = sync('s-new', targets[0]!, '2026-01-02T00:02:00.000Z');
    expect(await replicas[0]!.ingest.ingestBatch(clusterId, [...newer, runNew])).toMatchObject({
      accepted: 6,
    });
    expect(await replicas[1]!.ingest.ingestBatch(clusterId, [...older, runOld])).toMatchObject({
      accepted: 6,
    });

    const { db } = replicas[0]!;
    const rows = await db.prisma.target.findMany({ where: { id: { in: targets } } });
    expect(rows.map((t) => t.health)).toEqual(targets.map(() => 'Healthy'));
    expect(rows.map((t) => t.healthObservedAt?.toISOString())).toEqual(
      targets.map(() => '2026-01-02T00:02:00.000Z'),
    );
    const first = rows.find((t) => t.id === targets[0]);
    expect(first?.lastSyncedAt?.toISOString()).toBe('2026-01-02T00:02:00.000Z');
    expect(first?.lastReportAt?.toISOString()).toBe('2026-01-02T00:02:00.000Z');
    // Both runs are history; the old report is recorded, not applied: no health change audited for it.
    expect(await db.prisma.syncRun.count({ where: { agentReportId: { in: ['s-old', 's-new'] } } })).toBe(2);
    const changes = await db.prisma.auditEvent.findMany({
      where: { action: 'health.changed', scope: { in: rows.map((t) => `target:${t.name}`) } },
    });
    expect(changes.map((e) => (e.details as { to: string }).to)).toEqual(targets.map(() => 'Healthy'));

    // Inside one batch too: the order of observation decides, not the order in the batch.
    const t1 = targets[1]!;
    await replicas[0]!.ingest.ingestBatch(clusterId, [
      health('h-b-late', t1, '2026-01-02T00:04:00.000Z', 'Progressing'),
      health('h-b-early', t1, '2026-01-02T00:03:00.000Z', 'Degraded'),
    ]);
    expect((await db.prisma.target.findUniqueOrThrow({ where: { id: t1 } })).health).toBe('Progressing');
  });
});
