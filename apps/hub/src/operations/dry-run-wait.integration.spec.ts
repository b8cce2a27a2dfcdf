import 'reflect-metadata';
import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import type { AssignmentsResponse, Report, SyncRunPageView, TargetOperationView } from '@flotilla/contract';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTwoClusterFleet, type TwoClusterFleet } from '../testing/two-cluster-fleet.js';

const CLI = fileURLToPath(new URL('../../../cli/dist/main.js', import.meta.url));

/**
 * `flotilla sync --dry-run --wait` answers with the run of its own request: two people dry-running
 * one target at once each get their own answer, not the newest dry run of the target. Real hub
 * (PostgreSQL, Redis, Git) and the built CLI; the agent's side spoken by hand over the agent protocol.
 */
describe('a dry run waited for is answered by the run of its operation', () => {
  let fleet: TwoClusterFleet;
  beforeAll(async () => {
    fleet = await startTwoClusterFleet();
  }, 180_000);
  afterAll(async () => {
    await fleet?.close();
  }, 60_000);

  const operations = async () =>
    (await fleet.call<TargetOperationView[]>('GET', '/api/v1/targets/web-eu-1/operations')).body;
  const dryRunOf = (
    a: AssignmentsResponse['assignments'][number],
    operationId: string,
    startedAt: Date,
    name: string,
  ): Report => ({
    type: 'sync',
    id: randomUUID(),
    targetId: a.targetId,
    at: startedAt.toISOString(),
    revision: a.revision,
    bundleDigest: a.bundleDigest,
    trigger: 'manual',
    outcome: 'Succeeded',
    startedAt: startedAt.toISOString(),
    finishedAt: startedAt.toISOString(),
    message: 'dry run: nothing changed',
    resources: [
      {
        group: '',
        kind: 'ConfigMap',
        namespace: 'web',
        name,
        action: 'applied',
        message: 'would be changed',
      },
    ],
    dryRun: true,
    operationId,
  });

  it('prints what its own dry run would change when another dry run of the target finished after it', async () => {
    // The agent polls once, announcing that it can dry-run.
    const polled = await fleet.agent<AssignmentsResponse>('eu-1', 'GET', '/api/agent/v1/assignments?wait=0');
    expect(polled.status).toBe(200);
    const mine = promisify(execFile)(
      process.execPath,
      [CLI, 'sync', 'web-eu-1', '--reason', 'mine', '--dry-run', '--wait', '--timeout', '60', '-o', 'json'],
      {
        env: { ...process.env, ...fleet.cliEnv },
        timeout: 90_000,
      },
    );
    await expect.poll(async () => (await operations()).length, { timeout: 30_000 }).toBe(1);
    const [asked] = await operations();
    const other = await fleet.call<TargetOperationView>('POST', '/api/v1/targets/web-eu-1/sync', {
      reason: 'someone else',
      dryRun: true,
    });
    expect(other.status).toBe(202);

    // The agent runs both; the other one's run is the newer.
    const { body } = await fleet.agent<AssignmentsResponse>(
      'eu-1',
      'GET',
      '/api/agent/v1/assignments?wait=0',
    );
    const a = body.assignments.find((x) => x.name === 'web-eu-1')!;
    const now = Date.now();
    const reports = [
      dryRunOf(a, asked!.id, new Date(now), 'asked-by-me'),
      dryRunOf(a, other.body.id, new Date(now + 1_000), 'asked-by-someone-else'),
    ];
    expect((await fleet.agent('eu-1', 'POST', '/api/agent/v1/reports', { reports })).status).toBe(200);

    const { stdout } = await mine;
    const printed = JSON.parse(stdout) as TargetOperationView & { resources: { name: string }[] };
    expect(printed).toMatchObject({ id: asked!.id, state: 'Succeeded', dryRun: true });
    expect(printed.resources.map((r) => r.name)).toEqual(['asked-by-me']);

    // History links each run to the request it carried out.
    const runs = await fleet.call<SyncRunPageView>('GET', `/api/v1/sync-runs?operation=${other.body.id}`);
    expect(runs.body.items.map((r) => [r.operationId, r.resources])).toEqual([
      [other.body.id, [expect.objectContaining({ name: 'asked-by-someone-else' })]],
    ]);
  }, 120_000);
});
