import 'reflect-metadata';
import {
  AGENT_FEATURES,
  AGENT_FEATURES_HEADER,
  AGENT_VERSION_HEADER,
  type BulkSyncView,
  type TargetOperationView,
} from '@flotilla/contract';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTwoClusterFleet, type TwoClusterFleet } from '../testing/two-cluster-fleet.js';

/**
 * A registered agent that announces no features (an agent older than them) is never asked for a
 * dry run, a terminate or a per-run option: the hub refuses at once, naming the feature, the field
 * and the agent's version, and asks nothing; a bulk sync leaves its targets out, saying why. Before,
 * such a request was accepted and the old agent ran a plain sync of everything. Real hub (PostgreSQL,
 * Redis, Git); the agents' calls spoken by hand over the agent protocol.
 */
describe('requests an agent has not announced support for', () => {
  let fleet: TwoClusterFleet;
  /** eu-1's agent long-polls as version 0.0.9 announcing nothing; us-1's as a current agent. */
  const poll = (cluster: 'eu-1' | 'us-1', features: string, version: string) =>
    fleet.agent(cluster, 'GET', '/api/agent/v1/assignments?wait=0', undefined, {
      [AGENT_FEATURES_HEADER]: features,
      [AGENT_VERSION_HEADER]: version,
    });
  const operations = async (target: string) =>
    (await fleet.call<TargetOperationView[]>('GET', `/api/v1/targets/${target}/operations`)).body;
  const sync = (target: string, body: Record<string, unknown>) =>
    fleet.call<{ code: string; path: string; message: string } & TargetOperationView>(
      'POST',
      `/api/v1/targets/${target}/sync`,
      { reason: 'review done', ...body },
    );

  beforeAll(async () => {
    fleet = await startTwoClusterFleet();
    expect((await poll('eu-1', '', '0.0.9')).status).toBe(200);
    expect((await poll('us-1', AGENT_FEATURES.join(','), '0.2.0')).status).toBe(200);
  }, 180_000);
  afterAll(async () => {
    await fleet?.close();
  }, 60_000);

  it('refuses a dry run or a per-run option for the old agent by field, and asks nothing', async () => {
    const cases: [Record<string, unknown>, string, string][] = [
      [{ dryRun: true }, 'dryRun', 'dry-run'],
      [{ revision: 'abc1234' }, 'revision', 'run-revision'],
      [{ syncOptions: ['Replace=true'] }, 'syncOptions', 'run-sync-options'],
      [{ force: true }, 'force', 'run-force'],
      [{ resources: [{ kind: 'ConfigMap', name: 'web-config' }] }, 'resources', 'run-resources'],
    ];
    for (const [body, path, feature] of cases) {
      const r = await sync('web-eu-1', body);
      expect({ status: r.status, code: r.body.code, path: r.body.path }).toEqual({
        status: 409,
        code: 'agent-feature-missing',
        path,
      });
      expect(r.body.message).toBe(
        `the agent of cluster "eu-1" (version 0.0.9) has not announced support for "${feature}": upgrade the agent, or ask without ${path}`,
      );
    }
    expect(await operations('web-eu-1')).toEqual([]);
    const audit = await fleet.call<{ items: unknown[] }>('GET', '/api/v1/audit?action=target.sync-requested');
    expect(audit.body.items).toEqual([]);
    // The current agent is asked the same.
    const dry = await sync('web-us-1', { dryRun: true });
    expect(dry.status).toBe(202);
  });

  it('takes a plain sync for the old agent, but refuses to terminate it; the request stays as it was', async () => {
    const asked = await sync('web-eu-1', {});
    expect(asked.status).toBe(202);
    const refused = await fleet.call<{ code: string; path: string; message: string }>(
      'POST',
      `/api/v1/operations/${asked.body.id}/terminate`,
      { reason: 'wrong window' },
    );
    expect(refused.status).toBe(409);
    expect(refused.body).toMatchObject({
      code: 'agent-feature-missing',
      path: 'operation',
      message:
        'the agent of cluster "eu-1" (version 0.0.9) has not announced support for "terminate": cancel it before it starts, or upgrade the agent',
    });
    const [op] = await operations('web-eu-1');
    expect(op).toMatchObject({ id: asked.body.id, state: 'Pending' });
    expect(op?.terminate ?? null).toBeNull();
    const cancelled = await fleet.call('POST', `/api/v1/operations/${asked.body.id}/cancel`, { reason: 'x' });
    expect(cancelled.status).toBe(200);
  });

  it('leaves the old agent’s targets out of a bulk dry run, saying why, and asks the others', async () => {
    const bulk = await fleet.call<BulkSyncView>('POST', '/api/v1/targets/sync', {
      appSet: 'web',
      dryRun: true,
      reason: 'what would change?',
    });
    expect(bulk.status).toBe(202);
    expect(bulk.body.targets).toEqual(['web-us-1']);
    expect(bulk.body.skipped).toEqual([
      {
        target: 'web-eu-1',
        reason:
          'the agent of cluster "eu-1" (version 0.0.9) has not announced support for "dry-run": upgrade the agent, or ask without dryRun',
      },
    ]);
  });

  it('asks the agent once it announces the feature (after an upgrade)', async () => {
    expect((await poll('eu-1', 'dry-run', '0.2.0')).status).toBe(200);
    expect((await sync('web-eu-1', { dryRun: true })).status).toBe(202);
    const cluster = await fleet.call<{ agentVersion: string; agentFeatures: string[] }>(
      'GET',
      '/api/v1/clusters/eu-1',
    );
    expect(cluster.body).toMatchObject({ agentVersion: '0.2.0', agentFeatures: ['dry-run'] });
    // And announcing nothing again (a rollback of the agent) takes it back.
    expect((await poll('eu-1', '', '0.0.9')).status).toBe(200);
    expect((await sync('web-eu-1', { dryRun: true })).status).toBe(409);
  });
});
