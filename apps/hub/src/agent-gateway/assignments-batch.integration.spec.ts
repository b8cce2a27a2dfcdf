import 'reflect-metadata';
import { randomUUID } from 'node:crypto';
import type { AssignmentsResponse } from '@flotilla/contract';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { Database } from '../db/database.js';
import { ClusterWakeups } from '../wakeups/cluster-wakeups.service.js';
import { startTwoClusterFleet, type TwoClusterFleet } from '../testing/two-cluster-fleet.js';
import { AgentGatewayService } from './agent-gateway.service.js';

// The assignments of many clusters computed together (a release wakes their long-polls at once) on
// the real hub (PostgreSQL, Redis, Git): each exactly what computing that cluster alone gives.

let fleet: TwoClusterFleet;
const EXTRA = Array.from({ length: 48 }, (_, i) => `batch-${String(i).padStart(2, '0')}`);
const CLUSTERS = ['eu-1', 'us-1', ...EXTRA];
let clusters: { id: string; name: string }[] = [];

const db = () => fleet.hub.app.get(Database);
const gateway = () => fleet.hub.app.get(AgentGatewayService);
const targetOf = (cluster: string) =>
  db().prisma.target.findUniqueOrThrow({ where: { name: `wide-${cluster}` } });

/** Every cluster's assignments asked for at once (one burst), in CLUSTERS order. */
const together = () => Promise.all(clusters.map((c) => gateway().assignments(c.id, c.name)));

/** Every cluster's assignments computed alone, one after another. */
async function oneByOne(): Promise<AssignmentsResponse[]> {
  const out: AssignmentsResponse[] = [];
  for (const c of clusters) out.push(await gateway().assignments(c.id, c.name));
  return out;
}

/** The statements that read clusters' served targets, while `run` runs. */
async function targetReadsDuring<T>(run: () => Promise<T>): Promise<[T, number]> {
  const sql = vi.spyOn(db().sql, 'query');
  try {
    const result = await run();
    return [result, sql.mock.calls.filter(([text]) => text.includes('LEFT JOIN "TargetPin"')).length];
  } finally {
    sql.mockRestore();
  }
}

describe('assignments computed for a burst of clusters', () => {
  beforeAll(async () => {
    fleet = await startTwoClusterFleet();
    for (const name of EXTRA) {
      const created = await fleet.call('POST', '/api/v1/clusters', {
        name,
        labels: { ring: name.slice(-1) },
      });
      expect(created.status).toBe(201);
    }
    const applied = await fleet.call('POST', '/api/v1/appsets', {
      apiVersion: 'flotilla.dev/v1alpha1',
      kind: 'ApplicationSet',
      metadata: { name: 'wide' },
      spec: {
        generators: [{ list: { elements: CLUSTERS.map((cluster) => ({ cluster })) } }],
        template: {
          metadata: { name: 'wide-{{cluster}}' },
          spec: {
            source: { repoURL: fleet.repo.url, targetRevision: 'main', path: 'app' },
            destination: { name: '{{cluster}}', namespace: 'wide' },
          },
        },
      },
    });
    expect(applied.status).toBe(201);
    // Rendered and released onto every cluster (expect.poll is for tests, not their set-up).
    const released = () =>
      db().prisma.target.count({ where: { appSet: { name: 'wide' }, releasedDigest: { not: null } } });
    const deadline = Date.now() + 120_000;
    while ((await released()) < CLUSTERS.length) {
      if (Date.now() > deadline) throw new Error('the wide appset was not released within 120 s');
      await new Promise((resolve) => setTimeout(resolve, 500));
    }
    const rows = await db().prisma.cluster.findMany({ where: { name: { in: CLUSTERS } } });
    clusters = CLUSTERS.map((name) => rows.find((r) => r.name === name) ?? { id: '', name });
  }, 240_000);
  afterAll(async () => {
    await fleet?.close();
  }, 60_000);

  it('answers 50 clusters at once exactly as one by one, pins, break-glass, operations and tombstones included', async () => {
    const released = await targetOf('batch-01');
    // What sets clusters apart: a pin, a break-glass, a pending operation, a tombstone, labels.
    await db().prisma.targetPin.create({
      data: {
        targetId: released.id,
        revision: 'pinned-revision',
        bundleDigest: released.releasedDigest ?? '',
        reason: 'INC-1',
        actor: 'user:alice',
        expiresAt: new Date(Date.now() + 3_600_000),
      },
    });
    const opened = await fleet.call('POST', '/api/v1/break-glass', {
      scope: 'cluster',
      name: 'batch-03',
      reason: 'INC-2: hands on',
      durationMinutes: 30,
      pauseSelfHeal: true,
    });
    expect(opened.status).toBe(201);
    const operated = await targetOf('batch-05');
    await db().prisma.targetOperation.create({
      data: {
        targetId: operated.id,
        targetName: operated.name,
        clusterId: operated.clusterId,
        requestedBy: 'user:bob',
        reason: 'resync',
        expiresAt: new Date(Date.now() + 600_000),
      },
    });
    await db().prisma.target.update({
      where: { name: 'wide-batch-07' },
      data: { deletionId: randomUUID(), deletionState: 'Pending', deletionBy: 'user:carol' },
    });

    const [burst, burstReads] = await targetReadsDuring(together);
    const [alone, aloneReads] = await targetReadsDuring(oneByOne);
    // One set-based read of every cluster's targets for the burst, one each alone.
    expect([burstReads, aloneReads]).toEqual([1, CLUSTERS.length]);
    expect(burst).toEqual(alone);
    expect(burst.map((a) => a.etag)).toEqual(alone.map((a) => a.etag));
    expect(new Set(burst.map((a) => a.etag)).size).toBe(CLUSTERS.length);

    // And the differences did reach the answers.
    const of = (name: string) => burst[CLUSTERS.indexOf(name)] as AssignmentsResponse;
    const wide = (name: string) => of(name).assignments.find((a) => a.name === `wide-${name}`);
    expect(wide('batch-01')?.revision).toBe('pinned-revision');
    expect(of('batch-03').assignments.every((a) => a.breakGlass.length === 1)).toBe(true);
    expect(of('batch-04').assignments.every((a) => a.breakGlass.length === 0)).toBe(true);
    expect(wide('batch-05')?.operations.map((o) => o.reason)).toEqual(['resync']);
    expect(wide('batch-07')).toBeUndefined();
    expect(of('batch-07').deletions?.map((d) => d.name)).toEqual(['wide-batch-07']);
    expect(of('batch-08').deletions).toBeUndefined();
    // eu-1 and us-1 serve `web` too, each from its own targets.
    expect(of('eu-1').assignments.map((a) => a.name)).toEqual(['web-eu-1', 'wide-eu-1']);
  });

  it('answers the held long-polls a change wakes together with what each computed alone gives', async () => {
    const names = ['eu-1', 'us-1'] as const;
    const current = await Promise.all(
      names.map((name) => fleet.agent<AssignmentsResponse>(name, 'GET', '/api/agent/v1/assignments?wait=0')),
    );
    const held = names.map((name, i) =>
      fleet.agent<AssignmentsResponse>(name, 'GET', '/api/agent/v1/assignments?wait=30', undefined, {
        'if-none-match': current[i]?.etag ?? '',
      }),
    );
    // One break-glass on the appset wakes both held polls at once.
    const opened = await fleet.call('POST', '/api/v1/break-glass', {
      scope: 'appset',
      name: 'wide',
      reason: 'INC-3: all hands',
      durationMinutes: 30,
      allowSyncOutsideWindows: true,
    });
    expect(opened.status).toBe(201);
    const woken = (await Promise.all(held)).map((r) => [r.status, r.etag, r.body]);
    const alone: unknown[] = [];
    for (const c of clusters.slice(0, 2)) {
      const a = await gateway().assignments(c.id, c.name);
      alone.push([200, a.etag, a]);
    }
    expect(woken).toEqual(alone);
  });

  it('does not trust an answer read before a change that woke the cluster after the burst’s stamp', async () => {
    const cluster = clusters.find((c) => c.name === 'batch-10') ?? { id: '', name: '' };
    const target = await targetOf('batch-10');
    const wakeups = fleet.hub.app.get(ClusterWakeups);
    const before = wakeups.stamp();
    const query = db().sql.query.bind(db().sql);
    const sql = vi.spyOn(db().sql, 'query').mockImplementation(async (text, params) => {
      const rows = await query(text, params);
      if (text.includes('LEFT JOIN "TargetPin"')) {
        // The targets are read; then a pin commits and wakes the cluster, as a person's pin does.
        sql.mockRestore();
        await db().prisma.targetPin.create({
          data: {
            targetId: target.id,
            revision: 'pinned-mid-read',
            bundleDigest: target.releasedDigest ?? '',
            reason: 'INC-4',
            actor: 'user:dave',
          },
        });
        await wakeups.notify([cluster.id]);
        await expect.poll(() => wakeups.wokenSince(cluster.id, before)).toBe(true);
      }
      return rows;
    });
    const stale = await gateway().assignments(cluster.id, cluster.name);
    const revisionOf = (a: AssignmentsResponse) =>
      a.assignments.find((t) => t.name === target.name)?.revision;
    expect(revisionOf(stale)).toBe(target.releasedRevision);
    // The answer predates the pin: this replica must not answer a re-poll from its ETag.
    const row = await db().prisma.cluster.findUniqueOrThrow({ where: { id: cluster.id } });
    expect(gateway().knownEtag(row)).toBeUndefined();
    const fresh = await gateway().assignments(cluster.id, cluster.name);
    expect([revisionOf(fresh), fresh.etag === stale.etag]).toEqual(['pinned-mid-read', false]);
    expect(gateway().knownEtag(row)).toBe(fresh.etag);
  });

  it('refuses a revoked agent at once, even among a burst of accepted ones', async () => {
    const poll = (name: 'eu-1' | 'us-1') => fleet.agent(name, 'GET', '/api/agent/v1/assignments?wait=0');
    expect((await Promise.all([poll('eu-1'), poll('us-1')])).map((r) => r.status)).toEqual([200, 200]);
    expect((await fleet.call('POST', '/api/v1/clusters/us-1/revoke-credential')).status).toBe(201);
    const burst = await Promise.all([poll('eu-1'), poll('us-1'), poll('eu-1'), poll('us-1')]);
    expect(burst.map((r) => [r.status, (r.body as { code?: string }).code])).toEqual([
      [200, undefined],
      [401, 'credential-revoked'],
      [200, undefined],
      [401, 'credential-revoked'],
    ]);
  });
});
