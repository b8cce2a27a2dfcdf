import 'reflect-metadata';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  type AssignmentsResponse,
  BUNDLE_BATCH_MAX,
  type Bundle,
  type BundleBatchResponse,
} from '@flotilla/contract';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { loadHubConfig } from '../config/hub-config.js';
import { Database } from '../db/database.js';
import { createHubApp } from '../hub-app.js';
import { testRedisUrl } from '../testing/test-redis.js';
import { ClusterWakeups } from '../wakeups/cluster-wakeups.service.js';
import { startTwoClusterFleet, type TwoClusterFleet } from '../testing/two-cluster-fleet.js';
import { AgentGatewayService, KNOWN_ETAG_MAX_AGE_MS } from './agent-gateway.service.js';
import { LAST_SEEN_EVERY_MS } from './cluster-last-seen.service.js';
import { waitForIdleQueues } from '../testing/wait-for-idle.js';

// The pull side on the real hub (PostgreSQL, Redis, Git): bundles in one request, re-polls answered
// from a remembered ETag until something wakes the cluster, lastSeenAt written in batches.

let fleet: TwoClusterFleet;

const CONFIGMAP_V2 =
  'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web-config\ndata:\n  owner: web-team\n';

const assignments = (headers: Record<string, string> = {}, wait = 0) =>
  fleet.agent<AssignmentsResponse>(
    'eu-1',
    'GET',
    `/api/agent/v1/assignments?wait=${wait}`,
    undefined,
    headers,
  );

const clusterRow = (name: string) =>
  fleet.hub.app.get(Database).prisma.cluster.findUniqueOrThrow({ where: { name } });

describe('agent gateway', () => {
  beforeAll(async () => {
    fleet = await startTwoClusterFleet();
  }, 180_000);
  afterAll(async () => {
    await fleet?.close();
  }, 60_000);

  it('answers many bundles in one request: the cluster’s own, the rest refused and audited', async () => {
    // The fleet's targets are rendered; their release may land a moment later.
    await expect.poll(async () => (await assignments()).body.assignments.length).toBeGreaterThan(0);
    const digest = (await assignments()).body.assignments[0]?.bundleDigest ?? '';
    const single = await fleet.agent<Bundle>('eu-1', 'GET', `/api/agent/v1/bundles/${digest}`);
    expect(single.status).toBe(200);
    const foreign = `sha256:${'d'.repeat(64)}`;

    const batch = await fleet.agent<BundleBatchResponse>('eu-1', 'POST', '/api/agent/v1/bundles/batch', {
      digests: [digest, foreign, digest],
    });
    expect(batch.status).toBe(200);
    expect(batch.body).toEqual({ bundles: [single.body], refused: [foreign] });

    const audit = await fleet.call<{ items: { actor: string; details: Record<string, unknown> }[] }>(
      'GET',
      '/api/v1/audit?action=agent.access-denied',
    );
    expect(
      audit.body.items.map((e) => [e.actor, e.details['digest'], e.details['assignedElsewhere']]),
    ).toEqual([['agent:eu-1', foreign, false]]);

    const tooMany = Array.from(
      { length: BUNDLE_BATCH_MAX + 1 },
      (_, i) => `sha256:${i.toString(16).padStart(64, '0')}`,
    );
    const refused = await fleet.agent<{ path: string }>('eu-1', 'POST', '/api/agent/v1/bundles/batch', {
      digests: tooMany,
    });
    expect([refused.status, refused.body.path]).toEqual([400, 'digests']);
    const malformed = await fleet.agent<{ path: string }>('eu-1', 'POST', '/api/agent/v1/bundles/batch', {
      digests: ['sha256:nope'],
    });
    expect([malformed.status, malformed.body.path]).toEqual([400, 'digests[0]']);
  });

  it('serves a bundle read once to every cluster that wants it, and still refuses it to one that does not', async () => {
    const digest = (await assignments()).body.assignments[0]?.bundleDigest ?? '';
    const ask = (cluster: 'eu-1' | 'us-1', headers: Record<string, string> = {}) =>
      fleet.agent<BundleBatchResponse>(
        cluster,
        'POST',
        '/api/agent/v1/bundles/batch',
        { digests: [digest] },
        headers,
      );
    const eu = await ask('eu-1');
    const us = await ask('us-1');
    expect(eu.body.bundles.map((b) => b.digest)).toEqual([digest]);
    expect(us.body).toEqual(eu.body);

    // A cluster none of whose targets wants the bundle: the copy in memory changes nothing.
    const created = await fleet.call<{ bootstrapToken: string }>('POST', '/api/v1/clusters', {
      name: 'ap-1',
    });
    const registered = await fleet.call<{ credential: string }>('POST', '/api/agent/v1/register', {
      clusterName: 'ap-1',
      bootstrapToken: created.body.bootstrapToken,
    });
    const stranger = await ask('eu-1', { authorization: `Bearer ${registered.body.credential}` });
    expect([stranger.status, stranger.body]).toEqual([200, { bundles: [], refused: [digest] }]);
    const audit = await fleet.call<{ items: { actor: string; details: Record<string, unknown> }[] }>(
      'GET',
      '/api/v1/audit?action=agent.access-denied',
    );
    expect(audit.body.items.filter((e) => e.actor === 'agent:ap-1').map((e) => e.details['digest'])).toEqual([
      digest,
    ]);
  });

  it('lets an agent fetch the bundles of the answer it just got without asking the database, until a wake-up', async () => {
    const gateway = fleet.hub.app.get(AgentGatewayService);
    const first = await assignments();
    const digest = first.body.assignments[0]?.bundleDigest ?? '';
    const cluster = await clusterRow('eu-1');
    expect([...(gateway.knownDigests(cluster) ?? [])]).toEqual([digest]);
    const sql = vi.spyOn(fleet.hub.app.get(Database).sql, 'query');
    try {
      const batch = await fleet.agent<BundleBatchResponse>('eu-1', 'POST', '/api/agent/v1/bundles/batch', {
        digests: [digest],
      });
      expect(batch.body.bundles.map((b) => b.digest)).toEqual([digest]);
      // Neither which bundles the cluster may read nor the (cached) bundle itself was read.
      expect(
        sql.mock.calls
          .map(([text]) => text)
          .filter((t) => t.includes('"Bundle"') || t.includes('"TargetPin"')),
      ).toEqual([]);
    } finally {
      sql.mockRestore();
    }
    // A wake-up for the cluster (a release, on any replica) makes what this replica knows stale.
    await fleet.hub.app.get(ClusterWakeups).notify([cluster.id]);
    await expect.poll(() => gateway.knownDigests(cluster)).toBeUndefined();
  });

  it('answers a re-poll with a current ETag without computing the assignments until a wake-up', async () => {
    const gateway = fleet.hub.app.get(AgentGatewayService);
    const computed = vi.spyOn(gateway, 'assignments');
    try {
      const first = await assignments();
      expect(first.status).toBe(200);
      const etag = first.etag ?? '';
      expect(computed).toHaveBeenCalledTimes(1);

      // Nothing woke eu-1 since: 304 from the remembered ETag, the database not read.
      expect((await assignments({ 'if-none-match': etag })).status).toBe(304);
      expect(computed).toHaveBeenCalledTimes(1);

      // A wake-up (from any replica, through Redis) makes the next poll compute again: same set, 304.
      const cluster = await clusterRow('eu-1');
      await fleet.hub.app.get(ClusterWakeups).notify([cluster.id]);
      await expect
        .poll(async () => {
          const r = await assignments({ 'if-none-match': etag });
          return [r.status, computed.mock.calls.length > 1];
        })
        .toEqual([304, true]);
      const afterWake = computed.mock.calls.length;
      expect((await assignments({ 'if-none-match': etag })).status).toBe(304);
      expect(computed).toHaveBeenCalledTimes(afterWake);

      // A change to the cluster row (labels pick rollout steps and project rules) is seen without one.
      await fleet.hub.app
        .get(Database)
        .prisma.cluster.update({ where: { id: cluster.id }, data: { labels: { tier: 'gold' } } });
      expect((await assignments({ 'if-none-match': etag })).status).toBe(304);
      expect(computed).toHaveBeenCalledTimes(afterWake + 1);

      // And however quiet the cluster, a remembered ETag is trusted only so long.
      const fresh = await clusterRow('eu-1');
      expect(gateway.knownEtag(fresh)).toBe(etag);
      expect(gateway.knownEtag(fresh, Date.now() + KNOWN_ETAG_MAX_AGE_MS + 1)).toBeUndefined();
    } finally {
      computed.mockRestore();
    }
  });

  it('drops a remembered ETag when another replica changes the assignments', async () => {
    // Replica B: the same database and Redis prefix, the API role only, its own data dir.
    const dataDir = mkdtempSync(join(tmpdir(), 'flotilla-hub-b-'));
    const b = await createHubApp(
      loadHubConfig({
        HOST: '127.0.0.1',
        PORT: '0',
        DATABASE_URL: fleet.hub.postgres.url,
        REDIS_URL: testRedisUrl(),
        REDIS_PREFIX: fleet.hub.config.redis.prefix,
        FLOTILLA_DATA_DIR: dataDir,
        HUB_ROLES: 'api',
        LOG_LEVEL: 'warn',
        FLOTILLA_DEV_MODE: '1',
      }),
    );
    try {
      await b.listen(0, '127.0.0.1');
      const address = b.getHttpServer().address();
      const bUrl = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;
      const computed = vi.spyOn(fleet.hub.app.get(AgentGatewayService), 'assignments');

      const first = await assignments();
      const etag = first.etag ?? '';
      expect(first.body.assignments.flatMap((a) => a.breakGlass)).toEqual([]);
      expect((await assignments({ 'if-none-match': etag })).status).toBe(304);
      const computedBefore = computed.mock.calls.length;

      // A long-poll held on this replica (A) with the remembered ETag; the change goes through B.
      const waiting = assignments({ 'if-none-match': etag }, 30);
      const opened = await fetch(`${bUrl}/api/v1/break-glass`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({
          scope: 'cluster',
          name: 'eu-1',
          reason: 'INC-9: replicas disagree',
          durationMinutes: 30,
          pauseSelfHeal: true,
        }),
      });
      expect(opened.status).toBe(201);
      const woken = await waiting;
      expect(woken.status).toBe(200);
      expect(woken.body.assignments.every((a) => a.breakGlass.length === 1)).toBe(true);
      expect(computed.mock.calls.length).toBeGreaterThan(computedBefore);
      computed.mockRestore();

      // The next re-poll with the old ETag is not answered from anything remembered before the change.
      const again = await assignments({ 'if-none-match': etag });
      expect([again.status, again.etag]).toEqual([200, woken.etag]);
    } finally {
      await b.close();
      rmSync(dataDir, { recursive: true, force: true });
    }
  });

  it('wakes each cluster once for a released commit, and reads its new bundle once for clusters asking at once', async () => {
    const wakeups = fleet.hub.app.get(ClusterWakeups);
    const db = fleet.hub.app.get(Database);
    await waitForIdleQueues(fleet.hub.app);
    const notified = vi.spyOn(wakeups, 'notify');
    const query = db.sql.query.bind(db.sql);
    // Bundle reads held back a moment, so the two clusters' requests overlap whatever the machine's speed.
    const sql = vi.spyOn(db.sql, 'query').mockImplementation(async (text, params) => {
      if (text.includes('FROM "Bundle" b')) await new Promise((r) => setTimeout(r, 300));
      return query(text, params);
    });
    try {
      const sha = fleet.repo.commit({ 'app/config.yaml': CONFIGMAP_V2 }, 'owner web-team');
      const repos = await fleet.call<{ id: string }[]>('GET', '/api/v1/repositories');
      for (const r of repos.body) await fleet.call('POST', `/api/v1/repositories/${r.id}/refresh`);
      await expect
        .poll(async () => (await assignments()).body.assignments.map((a) => a.revision), { timeout: 60_000 })
        .toEqual([sha]);
      await waitForIdleQueues(fleet.hub.app);
      // The release wakes both clusters; the expansion does not wake them a second time.
      const ids = notified.mock.calls.flatMap(([clusterIds]) => [...clusterIds]).sort();
      const clusters = [(await clusterRow('eu-1')).id, (await clusterRow('us-1')).id].sort();
      expect(ids).toEqual(clusters);

      const digest = (await assignments()).body.assignments[0]?.bundleDigest ?? '';
      const ask = (cluster: 'eu-1' | 'us-1') =>
        fleet.agent<BundleBatchResponse>(cluster, 'POST', '/api/agent/v1/bundles/batch', {
          digests: [digest],
        });
      const [eu, us] = await Promise.all([ask('eu-1'), ask('us-1')]);
      expect(eu.body.bundles.map((b) => b.digest)).toEqual([digest]);
      expect(us.body).toEqual(eu.body);
      expect(sql.mock.calls.filter(([text]) => text.includes('FROM "Bundle" b'))).toHaveLength(1);
    } finally {
      sql.mockRestore();
      notified.mockRestore();
    }
  }, 120_000);

  it('wakes the clusters of an appset whose rollout strategy changed though no target did', async () => {
    const first = await assignments();
    const etag = first.etag ?? '';
    expect(first.body.assignments.every((a) => a.autoRollback === undefined)).toBe(true);
    expect((await assignments({ 'if-none-match': etag })).status).toBe(304);

    const waiting = assignments({ 'if-none-match': etag }, 30);
    const stored = await fleet.hub.app
      .get(Database)
      .prisma.applicationSet.findUniqueOrThrow({ where: { name: 'web' } });
    const document = stored.spec as { spec: Record<string, unknown> };
    const rollout = {
      steps: [{ name: 'all', selector: {}, maxUnavailable: '100%', progressDeadline: '7m' }],
    };
    const applied = await fleet.call(
      'POST',
      '/api/v1/appsets',
      { ...document, spec: { ...document.spec, rollout } },
      'alice',
    );
    expect([applied.status, applied.body]).toEqual([200, expect.anything()]);
    const woken = await waiting;
    expect(woken.status).toBe(200);
    expect(woken.body.assignments.map((a) => a.autoRollback)).toEqual(
      first.body.assignments.map(() => ({ progressDeadlineSeconds: 420 })),
    );
  });

  it('writes lastSeenAt only when older than LAST_SEEN_EVERY_MS, soon after the request', async () => {
    const db = fleet.hub.app.get(Database);
    const old = new Date(Date.now() - LAST_SEEN_EVERY_MS - 60_000);
    await db.prisma.cluster.update({ where: { name: 'us-1' }, data: { lastSeenAt: old } });
    const before = Date.now();
    expect((await fleet.agent('us-1', 'GET', '/api/agent/v1/assignments?wait=0')).status).toBe(200);
    await expect
      .poll(async () => (await clusterRow('us-1')).lastSeenAt?.getTime() ?? 0, { timeout: 10_000 })
      .toBeGreaterThanOrEqual(before - 1);
    const seen = (await clusterRow('us-1')).lastSeenAt?.getTime();

    // Seen moments ago: another request leaves the row alone.
    expect((await fleet.agent('us-1', 'GET', '/api/agent/v1/assignments?wait=0')).status).toBe(200);
    await new Promise((r) => setTimeout(r, 1_500));
    expect((await clusterRow('us-1')).lastSeenAt?.getTime()).toBe(seen);
  });
});
