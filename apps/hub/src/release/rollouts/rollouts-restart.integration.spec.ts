import { randomUUID } from 'node:crypto';
import { rmSync } from 'node:fs';
import type { NestExpressApplication } from '@nestjs/platform-express';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AssignmentsResponse } from '@flotilla/contract';
import { createHubApp } from '../../hub-app.js';
import { deleteRedisPrefix } from '../../testing/test-redis.js';
import { startTwoClusterFleet, type TwoClusterFleet } from '../../testing/two-cluster-fleet.js';

interface RolloutView {
  revision: string;
  status: string;
  step: string | null;
  message: string;
}

const configMap = (owner: string) =>
  `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web-config\ndata:\n  owner: ${owner}\n`;

/**
 * A rollout is rows and a Redis job scheduler, nothing in memory: a hub stopped mid-rollout and
 * started again (same PostgreSQL, Redis and port) carries on from the step it was at.
 */
describe('a rollout survives a hub restart (PostgreSQL, Redis, Git)', () => {
  let fleet: TwoClusterFleet;
  let restarted: NestExpressApplication | undefined;

  beforeAll(async () => {
    fleet = await startTwoClusterFleet({ ROLLOUT_TICK_SECONDS: '0.3' });
  }, 120_000);
  afterAll(async () => {
    if (!fleet) return;
    if (restarted) {
      // The first app is already closed: clean up what TestHub.close() would, around the second one.
      await restarted.close();
      await fleet.hub.postgres.drop();
      await deleteRedisPrefix(fleet.hub.config.redis.prefix);
      rmSync(fleet.hub.config.dataDir, { recursive: true, force: true });
      fleet.repo.remove();
    } else await fleet.close();
  });

  it('waits for health across the restart, and the scheduled ticks finish it', async () => {
    const rollout = async () => (await fleet.call<RolloutView>('GET', '/api/v1/rollouts/web')).body;
    const served = async (cluster: 'eu-1' | 'us-1') =>
      (await fleet.agent<AssignmentsResponse>(cluster, 'GET', '/api/agent/v1/assignments')).body
        .assignments[0];
    const first = (await served('eu-1'))?.revision;
    const applied = await fleet.call('POST', '/api/v1/appsets', {
      apiVersion: 'flotilla.dev/v1alpha1',
      kind: 'ApplicationSet',
      metadata: { name: 'web' },
      spec: {
        generators: [{ list: { elements: [{ cluster: 'eu-1' }, { cluster: 'us-1' }] } }],
        template: {
          metadata: { name: 'web-{{cluster}}' },
          spec: {
            source: { repoURL: fleet.repo.url, targetRevision: 'main', path: 'app' },
            destination: { name: '{{cluster}}', namespace: 'web' },
          },
        },
        rollout: { steps: [{ name: 'approval', selector: {}, maxUnavailable: 0 }] },
      },
    });
    expect(applied.status).toBe(200);
    const second = fleet.repo.commit({ 'app/config.yaml': configMap('web-team') });
    const repos = await fleet.call<{ id: string }[]>('GET', '/api/v1/repositories');
    for (const r of repos.body) await fleet.call('POST', `/api/v1/repositories/${r.id}/refresh`);
    await expect
      .poll(async () => (await rollout()).message, { timeout: 30_000 })
      .toBe('step approval is a manual gate: promote the rollout to release its 2 cluster(s)');

    expect((await served('eu-1'))?.revision).toBe(first);
    expect((await fleet.call('POST', '/api/v1/rollouts/web/promote', { reason: 'approved' })).status).toBe(
      200,
    );
    await expect.poll(async () => (await served('us-1'))?.revision, { timeout: 10_000 }).toBe(second);
    await expect
      .poll(async () => (await rollout()).message, { timeout: 10_000 })
      .toMatch(/0\/2 cluster\(s\) synced/);

    // Stop the hub mid-step and start a new one on the same database, Redis prefix and port.
    const port = Number(new URL(fleet.hub.url).port);
    await fleet.hub.app.close();
    restarted = await createHubApp(fleet.hub.config);
    await restarted.listen(port, '127.0.0.1');
    const after = await rollout();
    expect([after.revision, after.status, after.step]).toEqual([second, 'Progressing', 'approval']);

    for (const cluster of ['eu-1', 'us-1'] as const) {
      const a = await served(cluster);
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
        },
        { ...base, type: 'health', id: randomUUID(), status: 'Healthy' },
      ];
      expect((await fleet.agent(cluster, 'POST', '/api/agent/v1/reports', { reports })).status).toBe(200);
    }
    // Nobody calls the rollout API after the restart: the tick scheduler left in Redis finishes it.
    await expect.poll(async () => (await rollout()).status, { timeout: 15_000 }).toBe('Completed');
  }, 120_000);
});
