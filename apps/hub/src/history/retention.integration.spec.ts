import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Report } from '@flotilla/contract';
import { AuditLog } from '../audit/audit.service.js';
import { loadHubConfig, type HubConfig } from '../config/hub-config.js';
import type { Database } from '../db/database.js';
import { HubMetrics } from '../metrics/hub-metrics.service.js';
import { ReportIngestService } from '../agent-gateway/report-ingest.service.js';
import { createTestPostgres, openTestDatabase, type TestPostgres } from '../testing/test-database.js';
import { ensureMonthPartitions, listMonthPartitions } from '../db/partitions.js';
import { RetentionService } from './retention.service.js';

const DAY = 24 * 60 * 60 * 1000;
const daysAgo = (days: number, now = new Date()) => new Date(now.getTime() - days * DAY);

// Small batches, so every kind is pruned over several statements.
const config: HubConfig = loadHubConfig({
  FLOTILLA_DEV_MODE: '1',
  RETENTION_REPORT_PAYLOAD_DAYS: '7',
  RETENTION_REPORT_ID_DAYS: '30',
  RETENTION_SYNC_RUN_DAYS: '60',
  RETENTION_BUNDLE_DAYS: '14',
  RETENTION_BATCH_SIZE: '2',
});

describe('retention on PostgreSQL', () => {
  let pg: TestPostgres;
  let db: Database;
  let retention: RetentionService;
  let metrics: HubMetrics;
  let target: { id: string; clusterId: string };

  beforeEach(async () => {
    pg = await createTestPostgres();
    db = await openTestDatabase(pg.url);
    metrics = new HubMetrics(db);
    retention = new RetentionService(db, new AuditLog(db), metrics, config);
    const appSet = await db.prisma.applicationSet.create({
      data: { name: 'web', apiVersion: 'flotilla.dev/v1alpha1', spec: {} },
    });
    const cluster = await db.prisma.cluster.create({ data: { name: 'eu1' } });
    target = await db.prisma.target.create({
      data: {
        name: 'web-eu1',
        appSetId: appSet.id,
        clusterId: cluster.id,
        namespace: 'web',
        repoUrl: 'file:///repo',
        sourcePath: 'apps/web',
        targetRevision: 'main',
        desiredRevision: 'c9',
        syncPolicy: {},
      },
      select: { id: true, clusterId: true },
    });
  });

  afterEach(async () => {
    await db?.close();
    await pg?.drop();
  });

  const report = (id: string, receivedAt: Date) => ({
    id,
    clusterId: target.clusterId,
    type: 'health',
    targetId: target.id,
    payload: { id, note: 'the report as it came' },
    receivedAt,
  });

  const run = (
    id: string,
    startedAt: Date,
    extra: { outcome?: string; bundleDigest?: string; dryRun?: boolean } = {},
  ) => ({
    id,
    targetId: target.id,
    clusterId: target.clusterId,
    targetName: 'web-eu1',
    revision: 'c1',
    bundleDigest: extra.bundleDigest ?? 'sha256:any',
    trigger: 'auto',
    outcome: extra.outcome ?? 'Succeeded',
    dryRun: extra.dryRun ?? false,
    startedAt,
    finishedAt: startedAt,
    agentReportId: `report-${id}`,
    // Stored when it ran: retention counts from when the hub stored a run.
    createdAt: startedAt,
  });

  it('trims report payloads after their period, keeps ids for replays, then deletes the ids after theirs', async () => {
    const now = new Date();
    await db.prisma.processedReport.createMany({
      data: [
        report('fresh', daysAgo(1, now)),
        ...[1, 2, 3, 4, 5].map((i) => report(`week-old-${i}`, daysAgo(10, now))),
        // Just inside the 30 days ids are kept.
        report('at-horizon', daysAgo(29.5, now)),
        report('expired', daysAgo(40, now)),
      ],
    });

    const counts = await retention.run(now);

    expect(counts).toEqual({
      reportPayloadsTrimmed: 7,
      reportIdsDeleted: 1,
      syncRunsDeleted: 0,
      bundlesDeleted: 0,
      sourceVerificationsDeleted: 0,
      chartVerificationsDeleted: 0,
      syncRunPartitionsDropped: 0,
    });
    const rows = await db.prisma.processedReport.findMany({ orderBy: { id: 'asc' } });
    expect(rows.map((r) => [r.id, r.payload === null])).toEqual([
      ['at-horizon', true],
      ['fresh', false],
      ['week-old-1', true],
      ['week-old-2', true],
      ['week-old-3', true],
      ['week-old-4', true],
      ['week-old-5', true],
    ]);
    // A second run finds nothing left to do.
    expect(await retention.run(now)).toEqual({
      reportPayloadsTrimmed: 0,
      reportIdsDeleted: 0,
      syncRunsDeleted: 0,
      bundlesDeleted: 0,
      sourceVerificationsDeleted: 0,
      chartVerificationsDeleted: 0,
      syncRunPartitionsDropped: 0,
    });
  });

  it('records one retention.pruned audit event per run with its counts, and counts them in metrics', async () => {
    const now = new Date();
    await db.prisma.syncRun.createMany({
      data: [
        run('r-old-1', daysAgo(90, now)),
        run('r-old-2', daysAgo(61, now)),
        run('r-new', daysAgo(1, now)),
      ],
    });

    await retention.run(now);
    await retention.run(now);

    const events = await db.prisma.auditEvent.findMany({
      where: { action: 'retention.pruned' },
      orderBy: { id: 'asc' },
    });
    expect(events.map((e) => [e.actor, e.scope])).toEqual([
      ['system:retention', 'hub'],
      ['system:retention', 'hub'],
    ]);
    expect(events[0]?.details).toMatchObject({
      syncRunsDeleted: 2,
      reportPayloadsTrimmed: 0,
      reportIdsDeleted: 0,
      bundlesDeleted: 0,
      cutoffs: { syncRuns: daysAgo(60, now).toISOString(), reportIds: daysAgo(30, now).toISOString() },
    });
    expect(events[1]?.details).toMatchObject({ syncRunsDeleted: 0 });
    expect(await new AuditLog(db).verify()).toMatchObject({ valid: true });
    const text = await metrics.registry.metrics();
    expect(text).toContain('flotilla_retention_pruned_total{kind="syncRunsDeleted"} 2');
    expect(text).toMatch(/flotilla_retention_last_run_timestamp_seconds [1-9]/);
  });

  it('deletes sync runs older than their period and keeps the rest', async () => {
    const now = new Date();
    await db.prisma.syncRun.createMany({
      data: [
        ...[1, 2, 3, 4, 5].map((i) => run(`old-${i}`, daysAgo(60 + i, now))),
        run('recent', daysAgo(59, now)),
      ],
    });

    expect((await retention.run(now)).syncRunsDeleted).toBe(5);
    expect((await db.prisma.syncRun.findMany({ select: { id: true } })).map((r) => r.id)).toEqual(['recent']);
  });

  it('drops each month of sync runs stored wholly before the cutoff, and deletes only the cutoff month by row', async () => {
    const now = new Date('2026-11-20T12:00:00Z');
    await ensureMonthPartitions(db.prisma, 'SyncRun', new Date('2026-05-01T00:00:00Z'), 7);
    const at = (iso: string) => run(`run-${iso}`, new Date(iso));
    await db.prisma.syncRun.createMany({
      data: [
        at('2026-06-15T00:00:00.000Z'),
        at('2026-07-31T23:59:59.999Z'),
        // The month the cutoff (60 days: 2026-09-21T12:00Z) falls in: deleted by row up to the cutoff.
        at('2026-09-21T11:59:00.000Z'),
        at('2026-09-21T12:01:00.000Z'),
        at('2026-11-19T00:00:00.000Z'),
      ],
    });
    const months = async () => (await listMonthPartitions(db.prisma, 'SyncRun')).map((p) => p.name);

    const counts = await retention.run(now);

    expect(counts).toMatchObject({ syncRunsDeleted: 3, syncRunPartitionsDropped: 4 });
    const left = await months();
    for (const gone of ['SyncRun_p2026_05', 'SyncRun_p2026_06', 'SyncRun_p2026_07', 'SyncRun_p2026_08']) {
      expect(left).not.toContain(gone);
    }
    expect(left).toEqual(
      expect.arrayContaining(['SyncRun_p2026_09', 'SyncRun_p2026_10', 'SyncRun_p2026_11']),
    );
    const kept = await db.prisma.syncRun.findMany({ select: { id: true }, orderBy: { createdAt: 'asc' } });
    expect(kept.map((r) => r.id)).toEqual(['run-2026-09-21T12:01:00.000Z', 'run-2026-11-19T00:00:00.000Z']);
    const [event] = await db.prisma.auditEvent.findMany({ where: { action: 'retention.pruned' } });
    expect(event?.details).toMatchObject({ syncRunsDeleted: 3, syncRunPartitionsDropped: 4 });
    expect(await metrics.registry.metrics()).toContain(
      'flotilla_retention_partitions_dropped_total{table="SyncRun"} 4',
    );
    // The next run finds no month to drop and nothing before the cutoff.
    expect(await retention.run(now)).toMatchObject({ syncRunsDeleted: 0, syncRunPartitionsDropped: 0 });
  });

  it('keeps every bundle a target needs, however old, and prunes the rest once past their period', async () => {
    const now = new Date();
    const old = daysAgo(30, now);
    const digests = [
      'desired',
      'released',
      'synced',
      'pinned',
      'last-good',
      'older-good',
      'failed',
      'dry-run',
      'orphan',
    ];
    await db.prisma.bundle.createMany({
      data: [
        ...digests.map((d) => ({
          digest: d,
          manifests: [],
          repoUrl: 'file:///repo',
          revision: d,
          path: '.',
          createdAt: old,
        })),
        // Unreferenced but young: a render whose target is not updated yet.
        {
          digest: 'young',
          manifests: [],
          repoUrl: 'file:///repo',
          revision: 'y',
          path: '.',
          createdAt: daysAgo(1, now),
        },
      ],
    });
    await db.prisma.target.update({
      where: { id: target.id },
      data: { bundleDigest: 'desired', releasedDigest: 'released', lastSyncedDigest: 'synced' },
    });
    await db.prisma.targetPin.create({
      data: { targetId: target.id, revision: 'p', bundleDigest: 'pinned', reason: 'hold', actor: 'admin' },
    });
    await db.prisma.syncRun.createMany({
      data: [
        run('s1', daysAgo(5, now), { bundleDigest: 'older-good' }),
        // The last good bundle before the one it runs: what a rollback goes back to.
        run('s2', daysAgo(4, now), { bundleDigest: 'last-good' }),
        // Newer, but neither good nor real.
        run('s3', daysAgo(3, now), { bundleDigest: 'failed', outcome: 'Failed' }),
        run('s4', daysAgo(2, now), { bundleDigest: 'dry-run', dryRun: true }),
        run('s5', daysAgo(1, now), { bundleDigest: 'synced' }),
      ],
    });

    expect((await retention.run(now)).bundlesDeleted).toBe(4);
    const kept = (await db.prisma.bundle.findMany({ select: { digest: true } })).map((b) => b.digest).sort();
    expect(kept).toEqual(['desired', 'last-good', 'pinned', 'released', 'synced', 'young']);
  });

  it('splits the work between two runs at once (two replicas): each row pruned once', async () => {
    const now = new Date();
    await db.prisma.syncRun.createMany({
      data: Array.from({ length: 60 }, (_, i) =>
        run(`old-${String(i).padStart(2, '0')}`, daysAgo(61 + i, now)),
      ),
    });
    const other = await openTestDatabase(pg.url);
    try {
      const replica = new RetentionService(other, new AuditLog(other), new HubMetrics(other), config);
      const [a, b] = await Promise.all([retention.run(now), replica.run(now)]);
      expect(a.syncRunsDeleted + b.syncRunsDeleted).toBe(60);
      expect(await db.prisma.syncRun.count()).toBe(0);
    } finally {
      await other.close();
    }
  });

  describe('replays after retention', () => {
    const sync = (id: string, at: Date): Report => ({
      id,
      type: 'sync',
      targetId: target.id,
      at: at.toISOString(),
      revision: 'c9',
      bundleDigest: 'sha256:d9',
      trigger: 'auto',
      outcome: 'Succeeded',
      startedAt: at.toISOString(),
      finishedAt: at.toISOString(),
      message: '',
      resources: [],
    });

    beforeEach(async () => {
      // The hub gave this target the bundle the reports name (ingest refuses any other).
      await db.prisma.target.update({
        where: { id: target.id },
        data: { bundleDigest: 'sha256:d9', releasedDigest: 'sha256:d9', releasedRevision: 'c9' },
      });
    });

    it('takes an old report while no id was deleted, and drops one observed before what retention deleted', async () => {
      const ingest = new ReportIngestService(db, new AuditLog(db), metrics);
      // Nothing pruned yet: however old, a report is recognised by its id.
      expect(await ingest.ingestBatch(target.clusterId, [sync('old-but-known', daysAgo(40))])).toEqual({
        accepted: 1,
        duplicates: 0,
      });
      await db.prisma.processedReport.updateMany({ data: { receivedAt: daysAgo(40) } });
      expect((await retention.run()).reportIdsDeleted).toBe(1);
      const runs = await db.prisma.syncRun.count();
      const audited = await db.prisma.auditEvent.count();

      // Its replay, and anything observed before the deleted ids (plus a day of clock skew), is dropped.
      const result = await ingest.ingestBatch(target.clusterId, [
        sync('old-but-known', daysAgo(40)),
        sync('ancient', daysAgo(29.5)),
      ]);

      expect(result).toEqual({ accepted: 0, duplicates: 0, expired: 2 });
      expect(await db.prisma.syncRun.count()).toBe(runs);
      expect(await db.prisma.processedReport.count()).toBe(0);
      expect(await db.prisma.auditEvent.count()).toBe(audited);
      expect(await metrics.registry.metrics()).toContain(
        'flotilla_agent_reports_total{type="sync",result="expired"} 2',
      );
      // A report of now is taken as ever.
      expect(await ingest.ingestBatch(target.clusterId, [sync('fresh', new Date())])).toEqual({
        accepted: 1,
        duplicates: 0,
      });
    });

    it('stores a run whose agent clock is decades off, in the month the hub stored it', async () => {
      const ingest = new ReportIngestService(db, new AuditLog(db), metrics);
      const past = { ...sync('clock-1970', new Date()), startedAt: '1970-01-01T00:00:00.000Z' };
      const future = { ...sync('clock-2999', new Date()), startedAt: '2999-12-31T00:00:00.000Z' };

      expect(await ingest.ingestBatch(target.clusterId, [past, future])).toEqual({
        accepted: 2,
        duplicates: 0,
      });

      const rows = await db.sql.query<{ agentReportId: string; startedAt: Date; part: string }>(
        `SELECT "agentReportId", "startedAt", tableoid::regclass::text AS part FROM "SyncRun" ORDER BY "startedAt"`,
      );
      const now = new Date();
      const month = `"SyncRun_p${now.getUTCFullYear()}_${String(now.getUTCMonth() + 1).padStart(2, '0')}"`;
      expect(rows.map((r) => [r.agentReportId, r.part])).toEqual([
        ['clock-1970', month],
        ['clock-2999', month],
      ]);
    });

    it('adds no second sync run when a report whose id was deleted is sent again', async () => {
      const ingest = new ReportIngestService(db, new AuditLog(db), metrics);
      // Observed by an agent whose clock runs three days ahead: past the day of skew the replay
      // horizon allows for, so the horizon alone would not stop its replay.
      const report = sync('again', daysAgo(-3));
      expect(await ingest.ingestBatch(target.clusterId, [report])).toEqual({ accepted: 1, duplicates: 0 });
      // As retention does it (watermark first, then the ids received before it), while the run is kept.
      const before = new Date(Date.now() + 1000);
      await db.prisma.retentionWatermark.upsert({
        where: { kind: 'reportIds' },
        create: { kind: 'reportIds', before },
        update: { before },
      });
      await db.prisma.processedReport.deleteMany({ where: { id: 'again' } });

      await ingest.ingestBatch(target.clusterId, [report]);

      expect(await db.prisma.syncRun.count({ where: { agentReportId: 'again' } })).toBe(1);
    });
  });
});
