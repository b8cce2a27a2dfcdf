import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AssignmentsResponse } from '@flotilla/contract';
import { startTwoClusterFleet, type TwoClusterFleet } from '../../testing/two-cluster-fleet.js';

interface RolloutView {
  revision: string;
  status: string;
  step: string | null;
  message: string;
  targets: { name: string; releasedRevision: string | null; pinnedAt: string | null }[];
}
interface RunsPage {
  items: { target: string; trigger: string; outcome: string; revision: string }[];
  nextCursor: string | null;
}

const configMap = (owner: string) =>
  `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web-config\ndata:\n  owner: ${owner}\n`;

/**
 * Rollouts, pins and history on the real hub (PostgreSQL, Redis, Git), speaking the agent protocol
 * by hand: what agents are served is the release or a pin, never straight what Git wants.
 */
describe('rollouts, pins and sync history (PostgreSQL, Redis, Git)', () => {
  let fleet: TwoClusterFleet;
  let first: string;
  let second: string;
  const assignments = async (cluster: 'eu-1' | 'us-1') =>
    (await fleet.agent<AssignmentsResponse>(cluster, 'GET', '/api/agent/v1/assignments')).body.assignments;
  const revisionServed = async (cluster: 'eu-1' | 'us-1') => (await assignments(cluster))[0]?.revision;
  const rollout = async () => (await fleet.call<RolloutView>('GET', '/api/v1/rollouts/web')).body;
  /** What the agent of `cluster` would report after syncing what it is served, Healthy. */
  const reportSyncedHealthy = async (cluster: 'eu-1' | 'us-1', extra: Record<string, unknown> = {}) => {
    const [a] = await assignments(cluster);
    const at = new Date().toISOString();
    const base = { targetId: a?.targetId, at };
    const reports = [
      {
        ...base,
        type: 'sync',
        id: randomUUID(),
        revision: a?.revision,
        bundleDigest: a?.bundleDigest,
        trigger: 'auto',
        outcome: 'Succeeded',
        startedAt: at,
        finishedAt: at,
        ...extra,
      },
      { ...base, type: 'health', id: randomUUID(), status: 'Healthy' },
    ];
    expect((await fleet.agent(cluster, 'POST', '/api/agent/v1/reports', { reports })).status).toBe(200);
    return a;
  };

  beforeAll(async () => {
    fleet = await startTwoClusterFleet({ ROLLOUT_TICK_SECONDS: '0.3' });
    first = (await fleet.call<{ desiredRevision: string }[]>('GET', '/api/v1/targets?appSet=web')).body[0]!
      .desiredRevision;
  }, 120_000);
  afterAll(async () => {
    await fleet?.close();
  });

  it('without a strategy releases at once', async () => {
    await expect.poll(() => revisionServed('eu-1'), { timeout: 20_000 }).toBe(first);
    expect(await revisionServed('us-1')).toBe(first);
  });

  it('refuses a bad spec.rollout with the field path, changing nothing', async () => {
    const current = (await fleet.call<{ spec: Record<string, unknown> }>('GET', '/api/v1/appsets/web')).body;
    const bad = await fleet.call<{ code: string; path: string }>('POST', '/api/v1/appsets', {
      apiVersion: 'flotilla.dev/v1alpha1',
      kind: 'ApplicationSet',
      metadata: { name: 'web' },
      spec: { ...webSpec(fleet.repo.url), rollout: { steps: [{ selector: {}, maxUnavailable: -1 }] } },
    });
    expect(bad.status).toBe(400);
    expect(bad.body.path).toBe('spec.rollout.steps[0].maxUnavailable');
    expect((await fleet.call<{ spec: unknown }>('GET', '/api/v1/appsets/web')).body.spec).toEqual(
      current.spec,
    );
  });

  it('holds a new commit at a manual gate; pause, resume and promote move it, audited', async () => {
    const applied = await fleet.call('POST', '/api/v1/appsets', {
      apiVersion: 'flotilla.dev/v1alpha1',
      kind: 'ApplicationSet',
      metadata: { name: 'web' },
      spec: {
        ...webSpec(fleet.repo.url),
        rollout: { steps: [{ name: 'gate', selector: {}, maxUnavailable: 0, progressDeadline: '10m' }] },
      },
    });
    expect(applied.status).toBe(200);
    second = fleet.repo.commit({ 'app/config.yaml': configMap('web-team') }, 'owner web-team');
    const repos = await fleet.call<{ id: string }[]>('GET', '/api/v1/repositories');
    for (const r of repos.body) await fleet.call('POST', `/api/v1/repositories/${r.id}/refresh`);

    await expect.poll(async () => (await rollout()).revision, { timeout: 30_000 }).toBe(second);
    await expect
      .poll(async () => (await rollout()).message, { timeout: 10_000 })
      .toBe('step gate is a manual gate: promote the rollout to release its 2 cluster(s)');
    // Git wants the second commit; agents are still given the first.
    expect(await revisionServed('eu-1')).toBe(first);
    const targets = (
      await fleet.call<{ desiredRevision: string; releasedRevision: string }[]>(
        'GET',
        '/api/v1/targets?appSet=web',
      )
    ).body;
    expect(targets.map((t) => [t.desiredRevision, t.releasedRevision])).toEqual([
      [second, first],
      [second, first],
    ]);

    const noReason = await fleet.call<{ path: string }>('POST', '/api/v1/rollouts/web/pause', {});
    expect([noReason.status, noReason.body.path]).toEqual([400, 'reason']);
    const paused = await fleet.call<RolloutView>(
      'POST',
      '/api/v1/rollouts/web/pause',
      { reason: 'incident 42' },
      'ann',
    );
    expect([paused.status, paused.body.status]).toEqual([200, 'Paused']);
    expect((await fleet.call('POST', '/api/v1/rollouts/web/pause', { reason: 'again' })).status).toBe(409);
    const resumed = await fleet.call<RolloutView>(
      'POST',
      '/api/v1/rollouts/web/resume',
      { reason: 'fixed' },
      'ann',
    );
    expect(resumed.body.status).toBe('Progressing');

    const promoted = await fleet.call<RolloutView>(
      'POST',
      '/api/v1/rollouts/web/promote',
      { reason: 'go' },
      'ann',
    );
    expect(promoted.status).toBe(200);
    await expect.poll(() => revisionServed('eu-1'), { timeout: 10_000 }).toBe(second);
    expect(await revisionServed('us-1')).toBe(second);
    await expect
      .poll(async () => (await rollout()).message, { timeout: 10_000 })
      .toMatch(/0\/2 cluster\(s\) synced and Healthy/);

    await reportSyncedHealthy('eu-1');
    await reportSyncedHealthy('us-1');
    await expect.poll(async () => (await rollout()).status, { timeout: 10_000 }).toBe('Completed');

    const audit = await fleet.call<{
      items: { action: string; actor: string; details: { reason?: string } }[];
    }>('GET', '/api/v1/audit?action=rollout.');
    const actions = audit.body.items.map((e) => e.action);
    for (const a of [
      'rollout.started',
      'rollout.paused',
      'rollout.resumed',
      'rollout.promoted',
      'rollout.released',
      'rollout.completed',
    ])
      expect(actions).toContain(a);
    expect(audit.body.items.find((e) => e.action === 'rollout.paused')).toMatchObject({
      details: { reason: 'incident 42' },
    });
  });

  it('a pin serves an earlier revision under auto-sync until unpinned; bad pins change nothing', async () => {
    const noReason = await fleet.call<{ path: string }>('POST', '/api/v1/targets/web-eu-1/pin', {
      revision: first,
    });
    expect([noReason.status, noReason.body.path]).toEqual([400, 'reason']);
    const unknown = await fleet.call<{ path: string }>('POST', '/api/v1/targets/web-eu-1/pin', {
      revision: 'no-such-branch',
      reason: 'x',
    });
    expect([unknown.status, unknown.body.path]).toEqual([422, 'revision']);
    expect(await revisionServed('eu-1')).toBe(second);

    const pinned = await fleet.call<{ revision: string; bundleDigest: string }>(
      'POST',
      '/api/v1/targets/web-eu-1/pin',
      {
        revision: first,
        reason: 'owner change broke billing',
        expiresAt: new Date(Date.now() + 3_600_000).toISOString(),
      },
      'ann',
    );
    expect(pinned.status).toBe(200);
    const [a] = await assignments('eu-1');
    expect([a?.revision, a?.bundleDigest]).toEqual([first, pinned.body.bundleDigest]);
    // The pinned bundle is the one eu-1 ran before, and eu-1 may fetch it.
    const bundle = await fleet.agent<{ manifests: { data: { owner: string } }[] }>(
      'eu-1',
      'GET',
      `/api/agent/v1/bundles/${encodeURIComponent(pinned.body.bundleDigest)}`,
    );
    expect(bundle.body.manifests[0]?.data.owner).toBe('platform');
    expect(await revisionServed('us-1')).toBe(second);

    expect(
      (await fleet.call('DELETE', '/api/v1/targets/web-eu-1/pin', { reason: 'billing fixed' }, 'ann')).status,
    ).toBe(204);
    expect(await revisionServed('eu-1')).toBe(second);
  });

  it('pinning a revision whose bundle retention pruned renders it again', async () => {
    const rendered = await fleet.call<{ revision: string; bundleDigest: string }>(
      'POST',
      '/api/v1/targets/web-eu-1/pin',
      { revision: first, reason: 'what the commit renders to' },
      'ann',
    );
    expect(rendered.status).toBe(200);
    expect(
      (await fleet.call('DELETE', '/api/v1/targets/web-eu-1/pin', { reason: 'done' }, 'ann')).status,
    ).toBe(204);
    // History says eu-1 ran the commit as a bundle retention has since pruned (the run stays).
    const pruned = `sha256:${'e'.repeat(64)}`;
    const runId = randomUUID();
    const sql = new pg.Client({ connectionString: fleet.hub.postgres.url });
    await sql.connect();
    try {
      await sql.query(
        `INSERT INTO "SyncRun" ("id", "targetId", "clusterId", "revision", "bundleDigest", "trigger",
           "outcome", "startedAt", "finishedAt", "agentReportId")
         SELECT $1, t."id", t."clusterId", $2, $3, 'auto', 'Succeeded', now(), now(), $1
           FROM "Target" t WHERE t."name" = 'web-eu-1'`,
        [runId, first, pruned],
      );
      expect((await sql.query('SELECT 1 FROM "Bundle" WHERE "digest" = $1', [pruned])).rowCount).toBe(0);

      const pinned = await fleet.call<{ revision: string; bundleDigest: string }>(
        'POST',
        '/api/v1/targets/web-eu-1/pin',
        { revision: first, reason: 'roll back after retention' },
        'ann',
      );

      // Not the pruned digest the agent could never fetch: the commit rendered again.
      expect(pinned.status).toBe(200);
      expect(pinned.body.bundleDigest).toBe(rendered.body.bundleDigest);
      const bundle = await fleet.agent<{ manifests: { data: { owner: string } }[] }>(
        'eu-1',
        'GET',
        `/api/agent/v1/bundles/${encodeURIComponent(pinned.body.bundleDigest)}`,
      );
      expect(bundle.status).toBe(200);
      expect(bundle.body.manifests[0]?.data.owner).toBe('platform');
      expect(
        (await fleet.call('DELETE', '/api/v1/targets/web-eu-1/pin', { reason: 'done' }, 'ann')).status,
      ).toBe(204);
    } finally {
      // The made-up run leaves the history the later tests page through as it was.
      await sql.query('DELETE FROM "SyncRun" WHERE "id" = $1', [runId]);
      await sql.end();
    }
  });

  it('pins a whole appset (or the clusters a selector picks) at once, or nothing', async () => {
    const none = await fleet.call<{ path: string }>('POST', '/api/v1/appsets/web/pin', {
      revision: first,
      reason: 'x',
      clusterSelector: { matchLabels: { ring: 'canary' } },
    });
    expect([none.status, none.body.path]).toEqual([404, 'clusterSelector']);
    const badSelector = await fleet.call<{ path: string }>('POST', '/api/v1/appsets/web/pin', {
      revision: first,
      reason: 'x',
      clusterSelector: { matchExpressions: [{ key: 'ring', operator: 'Near' }] },
    });
    expect([badSelector.status, badSelector.body.path]).toEqual([
      400,
      'clusterSelector.matchExpressions[0].operator',
    ]);
    expect(await revisionServed('eu-1')).toBe(second);

    const pinned = await fleet.call<{ target: string }[]>('POST', '/api/v1/appsets/web/pin', {
      revision: first,
      reason: 'fleet-wide rollback',
    });
    expect(pinned.body.map((p) => p.target)).toEqual(['web-eu-1', 'web-us-1']);
    expect([await revisionServed('eu-1'), await revisionServed('us-1')]).toEqual([first, first]);
    const unpinned = await fleet.call<{ unpinned: string[] }>('DELETE', '/api/v1/appsets/web/pin', {
      reason: 'fixed forward',
    });
    expect(unpinned.body.unpinned).toEqual(['web-eu-1', 'web-us-1']);
    expect([await revisionServed('eu-1'), await revisionServed('us-1')]).toEqual([second, second]);
  });

  it('an expired pin is removed, audited, and the target follows its release again', async () => {
    const pinned = await fleet.call('POST', '/api/v1/targets/web-us-1/pin', {
      revision: first,
      reason: 'for a while',
      expiresAt: new Date(Date.now() + 600_000).toISOString(),
    });
    expect(pinned.status).toBe(200);
    expect(await revisionServed('us-1')).toBe(first);
    // Its time runs out (moved, not waited for: on a busy machine the POST alone can take seconds).
    const sql = new pg.Client({ connectionString: fleet.hub.postgres.url });
    await sql.connect();
    try {
      await sql.query(
        `UPDATE "TargetPin" SET "expiresAt" = now()
           WHERE "targetId" = (SELECT "id" FROM "Target" WHERE "name" = 'web-us-1')`,
      );
    } finally {
      await sql.end();
    }
    await expect.poll(() => revisionServed('us-1'), { timeout: 15_000, interval: 500 }).toBe(second);
    await expect
      .poll(async () => (await fleet.call<unknown[]>('GET', '/api/v1/pins')).body, { timeout: 10_000 })
      .toEqual([]);
    const expired = await fleet.call<{ items: { actor: string; scope: string }[] }>(
      'GET',
      '/api/v1/audit?action=target.pin-expired',
    );
    expect(expired.body.items).toEqual([
      expect.objectContaining({ actor: 'system:pin-expiry', scope: 'target:web-us-1' }),
    ]);
  });

  it('an automatic rollback report fails the revision, pins the target and is found in the history', async () => {
    // eu-1's agent restored the first revision on its own.
    const [a] = await assignments('eu-1');
    const pinnedDigest = (
      await fleet.call<{ revision: string; bundleDigest: string }>('POST', '/api/v1/targets/web-eu-1/pin', {
        revision: first,
        reason: 'to learn the digest',
      })
    ).body.bundleDigest;
    // A rollback may only go where the target ran: eu-1's agent ran the first revision (served
    // while pinned), as it had before the second came.
    const ran = new Date().toISOString();
    const earlier = {
      type: 'sync',
      id: randomUUID(),
      targetId: a?.targetId,
      at: ran,
      revision: first,
      bundleDigest: pinnedDigest,
      trigger: 'manual',
      outcome: 'Succeeded',
      startedAt: ran,
      finishedAt: ran,
    };
    expect((await fleet.agent('eu-1', 'POST', '/api/agent/v1/reports', { reports: [earlier] })).status).toBe(
      200,
    );
    await fleet.call('DELETE', '/api/v1/targets/web-eu-1/pin', { reason: 'done' });
    const at = new Date().toISOString();
    const report = {
      type: 'sync',
      id: randomUUID(),
      targetId: a?.targetId,
      at,
      revision: first,
      bundleDigest: pinnedDigest,
      trigger: 'rollback',
      outcome: 'Succeeded',
      startedAt: at,
      finishedAt: at,
      rolledBackFrom: {
        revision: second,
        bundleDigest: a?.bundleDigest,
        reason: 'Degraded 600 s after revision',
      },
    };
    expect((await fleet.agent('eu-1', 'POST', '/api/agent/v1/reports', { reports: [report] })).status).toBe(
      200,
    );
    await expect.poll(() => revisionServed('eu-1'), { timeout: 10_000 }).toBe(first);
    const pins = await fleet.call<{ target: string; actor: string; reason: string }[]>('GET', '/api/v1/pins');
    expect(pins.body).toEqual([
      expect.objectContaining({
        target: 'web-eu-1',
        actor: 'agent:eu-1',
        reason: expect.stringContaining('automatic rollback on eu-1') as string,
      }),
    ]);
    const failed = await fleet.call<{ items: { details: { revision: string } }[] }>(
      'GET',
      '/api/v1/audit?action=revision.failed',
    );
    expect(failed.body.items.map((e) => e.details.revision)).toEqual([second]);

    const rollbacks = await fleet.call<RunsPage>('GET', '/api/v1/sync-runs?appSet=web&trigger=rollback');
    expect(rollbacks.body.items).toEqual([
      expect.objectContaining({
        target: 'web-eu-1',
        trigger: 'rollback',
        outcome: 'Succeeded',
        revision: first,
      }),
    ]);
  });

  it('pages the history with a cursor, never skipping or repeating, and refuses bad filters', async () => {
    const all = await fleet.call<RunsPage>('GET', '/api/v1/sync-runs?appSet=web&limit=500');
    expect(all.body.items.length).toBe(4);
    const seen: string[] = [];
    let cursor: string | null = null;
    for (let i = 0; i < 5; i++) {
      const page: RunsPage = (
        await fleet.call<RunsPage>(
          'GET',
          `/api/v1/sync-runs?appSet=web&limit=1${cursor ? `&cursor=${cursor}` : ''}`,
        )
      ).body;
      seen.push(...page.items.map((r) => `${r.target}/${r.trigger}`));
      cursor = page.nextCursor;
      if (!cursor) break;
    }
    expect(seen).toEqual(all.body.items.map((r) => `${r.target}/${r.trigger}`));
    const eu = await fleet.call<RunsPage>(
      'GET',
      '/api/v1/sync-runs?cluster=eu-1&outcome=Succeeded&trigger=auto',
    );
    expect(eu.body.items.map((r) => r.target)).toEqual(['web-eu-1']);
    const future = await fleet.call<RunsPage>(
      'GET',
      `/api/v1/sync-runs?from=${encodeURIComponent(new Date(Date.now() + 60_000).toISOString())}`,
    );
    expect(future.body.items).toEqual([]);
    const bad = await fleet.call<{ path: string }>('GET', '/api/v1/sync-runs?trigger=sometimes');
    expect([bad.status, bad.body.path]).toEqual([400, 'trigger[0]']);
    expect((await fleet.call('GET', '/api/v1/sync-runs?cursor=bm90LWEtY3Vyc29y')).status).toBe(400);
  });
});

function webSpec(repoUrl: string) {
  return {
    generators: [{ list: { elements: [{ cluster: 'eu-1' }, { cluster: 'us-1' }] } }],
    template: {
      metadata: { name: 'web-{{cluster}}' },
      spec: {
        source: { repoURL: repoUrl, targetRevision: 'main', path: 'app' },
        destination: { name: '{{cluster}}', namespace: 'web' },
      },
    },
  };
}
