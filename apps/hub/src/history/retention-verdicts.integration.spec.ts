import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { AuditLog } from '../audit/audit.service.js';
import { loadHubConfig } from '../config/hub-config.js';
import type { Database } from '../db/database.js';
import { HubMetrics } from '../metrics/hub-metrics.service.js';
import { STRICT_BASELINE_CANDIDATES } from '../sources/verification/source-verifications.service.js';
import { createTestPostgres, openTestDatabase, type TestPostgres } from '../testing/test-database.js';
import { RetentionService } from './retention.service.js';

const DAY = 24 * 60 * 60 * 1000;
const daysAgo = (days: number, now: Date) => new Date(now.getTime() - days * DAY);

// Signed-commit verdicts (SourceVerification) on PostgreSQL: pruned past their period, except those a
// target still depends on and strict mode's baselines. Small batches, so it takes several statements.
const config = loadHubConfig({
  FLOTILLA_DEV_MODE: '1',
  RETENTION_SOURCE_VERIFICATION_DAYS: '90',
  RETENTION_BATCH_SIZE: '2',
});

describe('retention of signed-commit and chart provenance verdicts', () => {
  let pg: TestPostgres;
  let db: Database;
  let metrics: HubMetrics;
  let retention: RetentionService;

  beforeEach(async () => {
    pg = await createTestPostgres();
    db = await openTestDatabase(pg.url);
    metrics = new HubMetrics(db);
    retention = new RetentionService(db, new AuditLog(db), metrics, config);
  });

  afterEach(async () => {
    await db?.close();
    await pg?.drop();
  });

  const verdict = (repositoryId: string, commit: string, createdAt: Date, verified: boolean) => ({
    repositoryId,
    commit,
    digest: 'd1',
    mode: 'strict',
    verified,
    failedCommit: verified ? null : commit,
    signer: verified ? 'alice@example.com' : 'unsigned',
    message: verified ? 'verified' : 'not signed',
    createdAt,
  });

  /** A target wanting `desired` (with `extra` revisions), on a cluster of its own. */
  const target = async (name: string, desired: string, extra: Record<string, unknown> = {}) => {
    const appSet = await db.prisma.applicationSet.upsert({
      where: { name: 'web' },
      create: { name: 'web', apiVersion: 'flotilla.dev/v1alpha1', spec: {} },
      update: {},
    });
    const cluster = await db.prisma.cluster.create({ data: { name } });
    return db.prisma.target.create({
      data: {
        name: `web-${name}`,
        appSetId: appSet.id,
        clusterId: cluster.id,
        namespace: 'web',
        repoUrl: 'file:///repo',
        sourcePath: '.',
        targetRevision: 'main',
        desiredRevision: desired,
        syncPolicy: {},
        ...extra,
      },
    });
  };

  it('prunes old verdicts nothing needs; keeps those of live revisions, young ones and strict baselines', async () => {
    const now = new Date();
    const repo = await db.prisma.repository.create({ data: { url: 'file:///repo' } });
    const other = await db.prisma.repository.create({ data: { url: 'file:///other' } });
    // 25 old verified commits: the newest 20 are the baselines strict mode may judge from.
    const verified = Array.from({ length: 25 }, (_, i) => `v${String(i + 1).padStart(2, '0')}`);
    await db.prisma.sourceVerification.createMany({
      data: [
        ...verified.map((c, i) => verdict(repo.id, c, daysAgo(300 - i, now), true)),
        // Refused verdicts: of what targets want, run, last synced, are pinned to, or a source reads.
        ...['wanted', 'running', 'synced', 'pinned', 'second-source'].map((c) =>
          verdict(repo.id, c, daysAgo(200, now), false),
        ),
        verdict(repo.id, 'forgotten', daysAgo(200, now), false),
        verdict(repo.id, 'young', daysAgo(10, now), false),
        // Another repository's only verified commit: its baseline, however old.
        verdict(other.id, 'w1', daysAgo(400, now), true),
      ],
    });
    const a = await target('a', 'wanted', { releasedRevision: 'v02', lastSyncedRevision: 'synced' });
    await target('b', 'other', {
      releasedRevision: 'running',
      sources: [
        { repoUrl: 'file:///repo', path: '.', targetRevision: 'main', revision: 'other' },
        { repoUrl: 'file:///repo', path: 'b', targetRevision: 'x', revision: 'second-source' },
      ],
    });
    await db.prisma.targetPin.create({
      data: { targetId: a.id, revision: 'pinned', bundleDigest: 'sha256:p', reason: 'hold', actor: 'admin' },
    });

    const counts = await retention.run(now);

    // v01, v03, v04, v05 (old, no longer baselines, v02 still runs) and `forgotten`.
    expect(counts.sourceVerificationsDeleted).toBe(5);
    const kept = await db.prisma.sourceVerification.findMany({ select: { commit: true } });
    expect(kept.map((v) => v.commit).sort()).toEqual(
      [
        ...verified.slice(-STRICT_BASELINE_CANDIDATES),
        'v02',
        'wanted',
        'running',
        'synced',
        'pinned',
        'second-source',
        'young',
        'w1',
      ].sort(),
    );
    const event = await db.prisma.auditEvent.findFirst({ where: { action: 'retention.pruned' } });
    expect(event?.details).toMatchObject({
      sourceVerificationsDeleted: 5,
      cutoffs: { sourceVerifications: daysAgo(90, now).toISOString() },
    });
    expect(await metrics.registry.metrics()).toContain(
      'flotilla_retention_pruned_total{kind="sourceVerificationsDeleted"} 5',
    );
    // Nothing more to prune on the next run.
    expect((await retention.run(now)).sourceVerificationsDeleted).toBe(0);
  });

  it('prunes old chart provenance verdicts, keeping young ones and those of chart versions targets use', async () => {
    const now = new Date();
    const chartVerdict = (version: string, createdAt: Date) => ({
      repoUrl: 'https://charts.example.com',
      chart: 'web',
      version,
      packageDigest: `sha256:${version}`,
      digest: 'k1',
      verify: 'required',
      verified: true,
      signer: 'Release Bot <release@example.com>',
      message: 'signed by an allowed key',
      createdAt,
    });
    await db.prisma.chartVerification.createMany({
      data: [
        chartVerdict('1.0.0', daysAgo(200, now)),
        chartVerdict('1.1.0', daysAgo(200, now)),
        chartVerdict('1.2.0', daysAgo(200, now)),
        chartVerdict('2.0.0', daysAgo(10, now)),
      ],
    });
    // Chart versions are the revisions of a chart target: one wanted, one still running.
    await target('a', '1.2.0', { releasedRevision: '1.1.0' });

    const counts = await retention.run(now);

    expect(counts.chartVerificationsDeleted).toBe(1);
    const kept = await db.prisma.chartVerification.findMany({ select: { version: true } });
    expect(kept.map((v) => v.version).sort()).toEqual(['1.1.0', '1.2.0', '2.0.0']);
    expect((await retention.run(now)).chartVerificationsDeleted).toBe(0);
  });

  it('keeps every verdict when the period is 0', async () => {
    const now = new Date();
    const repo = await db.prisma.repository.create({ data: { url: 'file:///repo' } });
    await db.prisma.sourceVerification.createMany({
      data: [verdict(repo.id, 'forgotten', daysAgo(1000, now), false)],
    });
    const forever = new RetentionService(
      db,
      new AuditLog(db),
      metrics,
      loadHubConfig({ FLOTILLA_DEV_MODE: '1', RETENTION_SOURCE_VERIFICATION_DAYS: '0' }),
    );
    expect((await forever.run(now)).sourceVerificationsDeleted).toBe(0);
    expect(await db.prisma.sourceVerification.count()).toBe(1);
  });
});
