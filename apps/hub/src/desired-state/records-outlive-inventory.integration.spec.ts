import 'reflect-metadata';
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Report } from '@flotilla/contract';
import { ReportIngestService } from '../agent-gateway/report-ingest.service.js';
import { Database } from '../db/database.js';
import {
  createTestGitRepo,
  startTestHub,
  type TestGitRepo,
  type TestHub,
  hubCaller,
} from '../testing/index.js';

// History is a record, targets are inventory: on the real hub (PostgreSQL, Redis, Git), deleting an
// appset keeps its sync runs, and a target that moves to another cluster starts over there instead
// of showing what the old cluster reported.

const fixture = (name: string) => readFileSync(new URL(`./testdata/${name}`, import.meta.url), 'utf8');

let hub: TestHub;
let repo: TestGitRepo;

const call = hubCaller(() => hub);

/** One target named `name` (not derived from the cluster), on `cluster`. */
function appSetDoc(name: string, cluster: string): unknown {
  return {
    apiVersion: 'flotilla.dev/v1alpha1',
    kind: 'ApplicationSet',
    metadata: { name },
    spec: {
      generators: [{ list: { elements: [{ cluster }] } }],
      template: {
        metadata: { name },
        spec: {
          source: { repoURL: repo.url, targetRevision: 'main', path: 'app' },
          destination: { name: '{{cluster}}', namespace: 'web' },
        },
      },
    },
  };
}

interface TargetRow {
  id: string;
  clusterId: string;
  desiredRevision: string;
  bundleDigest: string | null;
  health: string;
  lastSyncedRevision: string | null;
  lastSyncedAt: Date | null;
  lastReportAt: Date | null;
}

async function targetOn(name: string, cluster: string): Promise<TargetRow> {
  const db = hub.app.get(Database);
  await expect
    .poll(
      async () =>
        (await db.prisma.target.findUnique({ where: { name }, include: { cluster: true } }))?.cluster.name,
      { timeout: 60_000 },
    )
    .toBe(cluster);
  return db.prisma.target.findUniqueOrThrow({ where: { name } });
}

/** What the cluster's agent would report after syncing the target: a run, then Healthy. */
async function reportSyncedAndHealthy(t: TargetRow, n: number): Promise<void> {
  const at = new Date(Date.UTC(2026, 0, 1, 0, n)).toISOString();
  const reports: Report[] = [
    {
      id: `sync-${t.id}-${n}`,
      type: 'sync',
      targetId: t.id,
      at,
      // What the hub assigned it: a sync naming another bundle is refused.
      revision: t.desiredRevision,
      bundleDigest: t.bundleDigest ?? '',
      trigger: 'auto',
      outcome: 'Succeeded',
      startedAt: at,
      finishedAt: at,
      message: '',
      resources: [],
    },
    {
      id: `health-${t.id}-${n}`,
      type: 'health',
      targetId: t.id,
      at,
      status: 'Healthy',
      message: '',
      resources: [],
    },
  ];
  expect(await hub.app.get(ReportIngestService).ingestBatch(t.clusterId, reports)).toEqual({
    accepted: 2,
    duplicates: 0,
  });
}

interface RunView {
  target: string;
  cluster: string;
  appSet: string;
  outcome: string;
}

async function history(query: string): Promise<RunView[]> {
  const r = await call<{ items: RunView[] }>('GET', `/api/v1/sync-runs?${query}`);
  expect(r.status).toBe(200);
  return r.body.items;
}

describe('records outlive the inventory they describe', () => {
  beforeAll(async () => {
    repo = createTestGitRepo({ 'app/config.yaml': fixture('configmap.yaml') });
    hub = await startTestHub();
    for (const name of ['c1', 'c2'])
      expect((await call('POST', '/api/v1/clusters', { name })).status).toBe(201);
  }, 180_000);

  afterAll(async () => {
    await hub?.close();
    repo?.remove();
  }, 120_000);

  it('deleting an appset keeps its sync history, with the names it had', async () => {
    expect((await call('POST', '/api/v1/appsets', appSetDoc('doomed', 'c1'))).status).toBe(201);
    const t = await targetOn('doomed', 'c1');
    await reportSyncedAndHealthy(t, 1);
    const before = await history('appSet=doomed');
    expect(before).toMatchObject([
      { target: 'doomed', cluster: 'c1', appSet: 'doomed', outcome: 'Succeeded' },
    ]);

    expect((await call('DELETE', '/api/v1/appsets/doomed')).status).toBe(204);
    expect((await call('GET', '/api/v1/appsets/doomed')).status).toBe(404);
    // Found by each name it was recorded under, and in the fleet-wide history.
    expect(await history('appSet=doomed')).toEqual(before);
    expect(await history('target=doomed')).toEqual(before);
    expect(await history('cluster=c1&appSet=doomed')).toEqual(before);
    expect((await history('limit=500')).filter((r) => r.appSet === 'doomed')).toEqual(before);
  }, 120_000);

  it('a target that moves to another cluster starts there with no status; its history keeps each cluster', async () => {
    expect((await call('POST', '/api/v1/appsets', appSetDoc('mover', 'c1'))).status).toBe(201);
    const onC1 = await targetOn('mover', 'c1');
    await reportSyncedAndHealthy(onC1, 2);
    const synced = await hub.app.get(Database).prisma.target.findUniqueOrThrow({ where: { name: 'mover' } });
    expect(synced).toMatchObject({ health: 'Healthy', lastSyncedRevision: repo.head() });

    expect((await call('POST', '/api/v1/appsets', appSetDoc('mover', 'c2'))).status).toBe(200);
    const onC2 = await targetOn('mover', 'c2');
    // c2 never synced it: nothing c1 reported may show as its state.
    expect(onC2.id).not.toBe(onC1.id);
    expect(onC2).toMatchObject({
      health: 'Unknown',
      lastSyncedRevision: null,
      lastSyncedAt: null,
      lastReportAt: null,
    });
    // A late report from c1's agent about the old target changes nothing on the new one.
    await hub.app.get(ReportIngestService).ingestBatch(onC1.clusterId, [
      {
        id: 'late-health',
        type: 'health',
        targetId: onC1.id,
        at: new Date().toISOString(),
        status: 'Healthy',
        message: '',
        resources: [],
      },
    ]);
    expect(
      (await hub.app.get(Database).prisma.target.findUniqueOrThrow({ where: { name: 'mover' } })).health,
    ).toBe('Unknown');

    await reportSyncedAndHealthy(onC2, 3);
    // Each run is labelled with the cluster that ran it.
    expect((await history('target=mover')).map((r) => r.cluster)).toEqual(['c2', 'c1']);
    expect((await history('cluster=c1&target=mover')).map((r) => r.cluster)).toEqual(['c1']);
    const expanded = await call<{ items: { details: Record<string, unknown> }[] }>(
      'GET',
      '/api/v1/audit?scope=appset:mover&action=appset.expanded&limit=10',
    );
    expect(expanded.body.items[0]?.details).toMatchObject({ moved: [{ name: 'mover', to: 'c2' }] });
  }, 120_000);
});
