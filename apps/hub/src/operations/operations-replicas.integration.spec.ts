import 'reflect-metadata';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import type { NestExpressApplication } from '@nestjs/platform-express';
import { AGENT_FEATURES, AGENT_FEATURES_HEADER } from '@flotilla/contract';
import type { AssignmentsResponse, Report, TargetOperationView } from '@flotilla/contract';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHubApp } from '../hub-app.js';
import { hubCaller } from '../testing/test-hub.js';
import { startTwoClusterFleet, type TwoClusterFleet } from '../testing/two-cluster-fleet.js';

/**
 * Two hub replicas on one PostgreSQL and one Redis (as in production behind a load balancer): a
 * request made through replica A reaches the agent long-polling replica B at once (the wake-up
 * goes through Redis, not memory), and the agent's report through B closes it for A, once. The
 * same for a terminate asked through A while the agent talks to B.
 */
describe('operations across hub replicas', () => {
  let fleet: TwoClusterFleet;
  let replicaB: NestExpressApplication;
  let dataDirB: string;
  let callB: ReturnType<typeof hubCaller>;
  const agentB = (method: string, path: string, body?: unknown, headers: Record<string, string> = {}) =>
    callB(method, path, body, {
      authorization: `Bearer ${fleet.credentials['eu-1']}`,
      // A current agent: it can be asked to terminate (see agent-features).
      [AGENT_FEATURES_HEADER]: AGENT_FEATURES.join(','),
      ...headers,
    });
  /** A people call on B, with the fleet's admin token (B shares A's configuration). */
  const peopleB: typeof callB = (method, path, body, headers = {}) =>
    callB(method, path, body, { authorization: `Bearer ${fleet.adminToken}`, ...headers });

  beforeAll(async () => {
    fleet = await startTwoClusterFleet();
    dataDirB = mkdtempSync(join(tmpdir(), 'flotilla-hub-b-'));
    replicaB = await createHubApp({ ...fleet.hub.config, dataDir: dataDirB });
    await replicaB.listen(0, '127.0.0.1');
    const address = replicaB.getHttpServer().address();
    const url = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;
    callB = hubCaller(() => ({ url }));
  }, 180_000);
  afterAll(async () => {
    await replicaB?.close();
    if (dataDirB) rmSync(dataDirB, { recursive: true, force: true });
    await fleet?.close();
  }, 60_000);

  /**
   * Reads B's current ETag, then holds a long-poll on B from it; resolves with what B answered. A
   * change landing before the poll reaches B is answered at once (its ETag differs), one after
   * it wakes the poll: either way only a change B learns of ends it before 60 s.
   */
  const longPollB = async () => {
    const now = await agentB('GET', '/api/agent/v1/assignments?wait=0');
    expect(now.status).toBe(200);
    return {
      polling: agentB('GET', '/api/agent/v1/assignments?wait=60', undefined, {
        'if-none-match': now.etag ?? '',
      }) as Promise<{ status: number; etag: string | null; body: AssignmentsResponse }>,
    };
  };
  const operationsOn = async (call: typeof callB) =>
    (await call('GET', '/api/v1/targets/web-eu-1/operations')).body as unknown as TargetOperationView[];

  const manualRun = (
    a: AssignmentsResponse['assignments'][number],
    operationId: string,
    outcome: 'Succeeded' | 'Terminated',
  ): Report => {
    const at = new Date().toISOString();
    return {
      type: 'sync',
      id: randomUUID(),
      targetId: a.targetId,
      at,
      revision: a.revision,
      bundleDigest: a.bundleDigest,
      trigger: 'manual',
      outcome,
      startedAt: at,
      finishedAt: at,
      message: outcome === 'Terminated' ? 'terminated by user:admin: wrong window' : '',
      resources: [],
      operationId,
    };
  };

  it(
    'a sync asked through A wakes the long-poll held by B, and B’s report closes it for A, once',
    { timeout: 90_000 },
    async () => {
      const { polling } = await longPollB();
      // B holds the poll; A takes the request.
      const asked = await fleet.call<TargetOperationView>('POST', '/api/v1/targets/web-eu-1/sync', {
        reason: 'asked on A',
      });
      expect(asked.status).toBe(202);
      const woke = await polling;
      expect(woke.status).toBe(200);
      const assignment = woke.body.assignments.find((a) => a.name === 'web-eu-1')!;
      expect(assignment.operations.map((o) => o.id)).toEqual([asked.body.id]);

      const run = manualRun(assignment, asked.body.id, 'Succeeded');
      expect((await agentB('POST', '/api/agent/v1/reports', { reports: [run] })).status).toBe(200);
      // Replayed through A: the same report id, nothing new.
      expect((await fleet.agent('eu-1', 'POST', '/api/agent/v1/reports', { reports: [run] })).status).toBe(
        200,
      );
      expect((await operationsOn((m, p) => fleet.call(m, p)))[0]).toMatchObject({
        id: asked.body.id,
        state: 'Succeeded',
      });
      const done = await fleet.call<{ items: unknown[] }>(
        'GET',
        '/api/v1/audit?scope=target:web-eu-1&action=target.sync-request-done',
      );
      expect(done.body.items).toHaveLength(1);
      // Closed: neither replica gives it to the agent again.
      expect((await agentB('GET', '/api/agent/v1/assignments?wait=0')).body).toMatchObject({
        assignments: [expect.objectContaining({ operations: [] })],
      });
    },
  );

  it(
    'a terminate asked through A reaches the agent polling B, and its Terminated run through B closes it',
    { timeout: 90_000 },
    async () => {
      const asked = await peopleB('POST', '/api/v1/targets/web-eu-1/sync', { reason: 'asked on B' });
      expect(asked.status).toBe(202);
      const id = (asked.body as unknown as TargetOperationView).id;
      const { polling } = await longPollB();
      const terminated = await fleet.call<TargetOperationView>('POST', `/api/v1/operations/${id}/terminate`, {
        reason: 'wrong window',
      });
      expect([terminated.status, terminated.body.state, terminated.body.terminate?.reason]).toEqual([
        200,
        'Pending',
        'wrong window',
      ]);
      const woke = await polling;
      expect(woke.status).toBe(200);
      const assignment = woke.body.assignments.find((a) => a.name === 'web-eu-1')!;
      expect(assignment.operations).toEqual([
        expect.objectContaining({ id, terminate: { requestedBy: 'user:admin', reason: 'wrong window' } }),
      ]);
      const run = manualRun(assignment, id, 'Terminated');
      expect((await agentB('POST', '/api/agent/v1/reports', { reports: [run] })).status).toBe(200);
      expect((await operationsOn((m, p) => fleet.call(m, p))).find((o) => o.id === id)).toMatchObject({
        state: 'Terminated',
      });
      expect((await operationsOn(peopleB)).find((o) => o.id === id)).toMatchObject({ state: 'Terminated' });
    },
  );
});
