import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Report } from '@flotilla/contract';
import { AuditLog } from '../audit/audit.service.js';
import type { Database } from '../db/database.js';
import { HubMetrics } from '../metrics/hub-metrics.service.js';
import { createMigratedPglite } from '../testing/test-database.js';
import { ReportIngestService } from './report-ingest.service.js';

describe('ReportIngestService (in-memory PGlite)', () => {
  let db: Database;
  let ingest: ReportIngestService;
  let mine: { clusterId: string; targetId: string };
  let theirs: { clusterId: string; targetId: string };

  beforeAll(async () => {
    db = await createMigratedPglite();
    ingest = new ReportIngestService(db, new AuditLog(db), new HubMetrics(db));
    const appSet = await db.prisma.applicationSet.create({
      data: { name: 'web', apiVersion: 'flotilla.dev/v1alpha1', spec: {} },
    });
    const make = async (cluster: string) => {
      const c = await db.prisma.cluster.create({ data: { name: cluster } });
      const t = await db.prisma.target.create({
        data: {
          name: `web-${cluster}`,
          appSetId: appSet.id,
          clusterId: c.id,
          namespace: 'web',
          repoUrl: 'file:///repo',
          sourcePath: 'apps/web',
          targetRevision: 'main',
          desiredRevision: 'c2',
          bundleDigest: 'sha256:d2',
          syncPolicy: {},
        },
      });
      return { clusterId: c.id, targetId: t.id };
    };
    mine = await make('eu1');
    theirs = await make('us1');
  });
  afterAll(async () => {
    await db?.close();
  });

  const sync = (id: string, targetId: string, outcome: 'Succeeded' | 'Failed', revision = 'c2'): Report => ({
    id,
    type: 'sync',
    targetId,
    at: '2026-01-01T00:00:02.000Z',
    revision,
    bundleDigest: 'sha256:d2',
    trigger: 'auto',
    outcome,
    startedAt: '2026-01-01T00:00:00.000Z',
    finishedAt: '2026-01-01T00:00:01.000Z',
    message: '',
    resources: [],
  });

  it('stores a sync run per new report and moves the last synced revision only on success', async () => {
    expect(await ingest.ingestBatch(mine.clusterId, [sync('s1', mine.targetId, 'Failed')])).toEqual({
      accepted: 1,
      duplicates: 0,
    });
    let t = await db.prisma.target.findUniqueOrThrow({ where: { id: mine.targetId } });
    expect(t.lastSyncedRevision).toBeNull();
    expect(t.lastReportAt?.toISOString()).toBe('2026-01-01T00:00:02.000Z');

    expect(await ingest.ingestBatch(mine.clusterId, [sync('s2', mine.targetId, 'Succeeded')])).toEqual({
      accepted: 1,
      duplicates: 0,
    });
    t = await db.prisma.target.findUniqueOrThrow({ where: { id: mine.targetId } });
    expect([t.lastSyncedRevision, t.lastSyncedDigest, t.lastSyncedAt?.toISOString()]).toEqual([
      'c2',
      'sha256:d2',
      '2026-01-01T00:00:01.000Z',
    ]);
    const runs = await db.prisma.syncRun.findMany({
      where: { targetId: mine.targetId },
      orderBy: { agentReportId: 'asc' },
    });
    expect(runs.map((r) => [r.agentReportId, r.outcome])).toEqual([
      ['s1', 'Failed'],
      ['s2', 'Succeeded'],
    ]);
  });

  it('counts a replay as duplicates and changes nothing', async () => {
    const before = await db.prisma.syncRun.count();
    expect(
      await ingest.ingestBatch(mine.clusterId, [
        sync('s1', mine.targetId, 'Failed'),
        sync('s2', mine.targetId, 'Succeeded'),
      ]),
    ).toEqual({ accepted: 0, duplicates: 2 });
    expect(await db.prisma.syncRun.count()).toBe(before);
  });

  it("ignores a report about another cluster's target", async () => {
    expect(await ingest.ingestBatch(mine.clusterId, [sync('s3', theirs.targetId, 'Succeeded')])).toEqual({
      accepted: 1,
      duplicates: 0,
    });
    const t = await db.prisma.target.findUniqueOrThrow({ where: { id: theirs.targetId } });
    expect(t.lastSyncedRevision).toBeNull();
    expect(await db.prisma.syncRun.count({ where: { targetId: theirs.targetId } })).toBe(0);
  });

  it('records health on the target (its change naming the revision synced) and drift in the audit log', async () => {
    await ingest.ingestBatch(mine.clusterId, [
      {
        id: 'h1',
        type: 'health',
        targetId: mine.targetId,
        at: '2026-01-01T00:00:03.000Z',
        status: 'Degraded',
        message: 'crash loop',
        resources: [],
      },
      {
        id: 'd1',
        type: 'drift',
        targetId: mine.targetId,
        at: '2026-01-01T00:00:04.000Z',
        state: 'healed',
        resource: { group: 'apps', kind: 'Deployment', namespace: 'web', name: 'web' },
        paths: ['/spec/replicas'],
        manager: 'kubectl-edit',
      },
    ]);
    const t = await db.prisma.target.findUniqueOrThrow({ where: { id: mine.targetId } });
    expect([t.health, t.healthMessage]).toEqual(['Degraded', 'crash loop']);
    const events = await db.prisma.auditEvent.findMany({
      where: { scope: 'target:web-eu1' },
      orderBy: { id: 'asc' },
    });
    expect(events.map((e) => [e.action, e.actor])).toEqual([
      ['sync.failed', 'agent:eu1'],
      ['sync.succeeded', 'agent:eu1'],
      ['health.changed', 'agent:eu1'],
      ['drift.healed', 'manager:kubectl-edit'],
    ]);
    expect(events.at(-1)?.details).toMatchObject({ paths: ['/spec/replicas'] });
    // A change of health names the revision the target runs (its last successful sync, above).
    expect(events[2]?.details).toMatchObject({ to: 'Degraded', message: 'crash loop', revision: 'c2' });
  });

  const health = (id: string, targetId: string, status: 'Healthy' | 'Degraded', at: string): Report => ({
    id,
    type: 'health',
    targetId,
    at,
    status,
    message: status === 'Healthy' ? '' : 'crash loop',
    resources: [],
  });

  it('counts an id repeated inside one batch once', async () => {
    const before = await db.prisma.syncRun.count();
    expect(
      await ingest.ingestBatch(mine.clusterId, [
        sync('s4', mine.targetId, 'Succeeded'),
        sync('s4', mine.targetId, 'Succeeded'),
      ]),
    ).toEqual({ accepted: 1, duplicates: 1 });
    expect(await db.prisma.syncRun.count()).toBe(before + 1);
    expect(await db.prisma.processedReport.count({ where: { id: 's4' } })).toBe(1);
    expect(
      await db.prisma.auditEvent.count({ where: { details: { path: ['reportId'], equals: 's4' } } }),
    ).toBe(1);
  });

  it('applies exactly the new reports of a batch that mixes new and replayed ones, in batch order', async () => {
    const runsBefore = await db.prisma.syncRun.count();
    const eventsBefore = await db.prisma.auditEvent.count();
    const result = await ingest.ingestBatch(mine.clusterId, [
      sync('s1', mine.targetId, 'Failed'), // replayed: stored in the first test
      health('h2', mine.targetId, 'Healthy', '2026-01-01T00:00:05.000Z'),
      health('h1', mine.targetId, 'Healthy', '2026-01-01T00:00:03.000Z'), // replayed
      sync('s5', mine.targetId, 'Failed'),
      health('h3', mine.targetId, 'Degraded', '2026-01-01T00:00:07.000Z'),
      sync('s2', mine.targetId, 'Succeeded'), // replayed
    ]);
    expect(result).toEqual({ accepted: 3, duplicates: 3 });

    // Only s5 adds history; the failed sync leaves the last synced revision where s4 put it.
    expect(await db.prisma.syncRun.count()).toBe(runsBefore + 1);
    const t = await db.prisma.target.findUniqueOrThrow({ where: { id: mine.targetId } });
    expect([t.health, t.healthMessage, t.lastSyncedRevision, t.lastReportAt?.toISOString()]).toEqual([
      'Degraded',
      'crash loop',
      'c2',
      '2026-01-01T00:00:07.000Z',
    ]);
    // Health moved Degraded → Healthy → Degraded within the batch: two changes, in order, and
    // the replayed h1 (whose stored effect was Degraded) is not applied again.
    const events = await db.prisma.auditEvent.findMany({ orderBy: { id: 'asc' }, skip: eventsBefore });
    expect(events.map((e) => [e.action, (e.details as { reportId: string }).reportId])).toEqual([
      ['health.changed', 'h2'],
      ['sync.failed', 's5'],
      ['health.changed', 'h3'],
    ]);
    expect(await new AuditLog(db).verify()).toMatchObject({ valid: true });

    // The same batch again is a replay through and through.
    expect(
      await ingest.ingestBatch(mine.clusterId, [
        sync('s1', mine.targetId, 'Failed'),
        health('h2', mine.targetId, 'Healthy', '2026-01-01T00:00:05.000Z'),
        sync('s5', mine.targetId, 'Failed'),
      ]),
    ).toEqual({ accepted: 0, duplicates: 3 });
    expect(await db.prisma.auditEvent.count()).toBe(eventsBefore + 3);
  });

  it('answers batches that arrive together from one shared transaction, each with its own counts', async () => {
    const runsBefore = await db.prisma.syncRun.count();
    // Sent at once: the first starts a transaction, the others wait and share the next one.
    const answers = await Promise.all([
      ingest.ingestBatch(mine.clusterId, [sync('g1', mine.targetId, 'Succeeded')]),
      ingest.ingestBatch(theirs.clusterId, [sync('g2', theirs.targetId, 'Succeeded')]),
      ingest.ingestBatch(mine.clusterId, [
        sync('g1', mine.targetId, 'Succeeded'),
        sync('g3', mine.targetId, 'Failed'),
      ]),
      ingest.ingestBatch(theirs.clusterId, [sync('g2', theirs.targetId, 'Succeeded')]),
    ]);
    expect(answers).toEqual([
      { accepted: 1, duplicates: 0 },
      { accepted: 1, duplicates: 0 },
      { accepted: 1, duplicates: 1 },
      { accepted: 0, duplicates: 1 },
    ]);
    expect(await db.prisma.syncRun.count()).toBe(runsBefore + 3);
    expect(await new AuditLog(db).verify()).toMatchObject({ valid: true });
  });

  it('fails only the batch that cannot be stored when it shares a transaction with others', async () => {
    const bad: Report = { ...sync('b2', mine.targetId, 'Succeeded'), at: 'not a time' };
    const settled = await Promise.allSettled([
      ingest.ingestBatch(mine.clusterId, [sync('b1', mine.targetId, 'Succeeded')]),
      ingest.ingestBatch(mine.clusterId, [bad]),
      ingest.ingestBatch(theirs.clusterId, [sync('b3', theirs.targetId, 'Succeeded')]),
    ]);
    expect(settled.map((s) => s.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
    const stored = await db.prisma.processedReport.findMany({ where: { id: { in: ['b1', 'b2', 'b3'] } } });
    expect(stored.map((r) => r.id).sort()).toEqual(['b1', 'b3']);
  });
});
