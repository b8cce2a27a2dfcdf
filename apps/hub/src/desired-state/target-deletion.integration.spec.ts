import 'reflect-metadata';
import { randomUUID } from 'node:crypto';
import type { AssignmentsResponse, Report, TargetDeletionView } from '@flotilla/contract';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Database } from '../db/database.js';
import { startTwoClusterFleet, type TwoClusterFleet } from '../testing/two-cluster-fleet.js';

// A target deleted with its objects, on the real hub (PostgreSQL, Redis, Git): the tombstone reaches
// its own cluster only, only that cluster's agent can complete it, and its history stays.

let fleet: TwoClusterFleet;
const poll = { timeout: 60_000, interval: 200 };

const assignments = async (cluster: 'eu-1' | 'us-1') =>
  (await fleet.agent<AssignmentsResponse>(cluster, 'GET', '/api/agent/v1/assignments?wait=0')).body;

const report = (cluster: 'eu-1' | 'us-1', reports: Report[]) =>
  fleet.agent<{ accepted: number }>(cluster, 'POST', '/api/agent/v1/reports', { reports });

const auditOf = async (action: string) =>
  (
    await fleet.call<{ items: { actor: string; scope: string; details: Record<string, unknown> }[] }>(
      'GET',
      `/api/v1/audit?action=${action}`,
    )
  ).body.items;

describe('deleting a target with its objects', () => {
  beforeAll(async () => {
    fleet = await startTwoClusterFleet();
  }, 180_000);
  afterAll(async () => {
    await fleet?.close();
  }, 60_000);

  it('serves a tombstone to its cluster only, refuses another cluster’s report, and completes on its own agent’s report, keeping history', async () => {
    await expect
      .poll(async () => (await assignments('eu-1')).assignments.map((a) => a.name), poll)
      .toEqual(['web-eu-1']);
    const assigned = (await assignments('eu-1')).assignments[0]!;
    const at = new Date().toISOString();
    // A sync run to outlive the target.
    expect(
      (
        await report('eu-1', [
          {
            type: 'sync',
            id: randomUUID(),
            targetId: assigned.targetId,
            at,
            revision: assigned.revision,
            bundleDigest: assigned.bundleDigest,
            trigger: 'auto',
            outcome: 'Succeeded',
            startedAt: at,
            finishedAt: at,
            message: '',
            resources: [],
          },
        ])
      ).status,
    ).toBe(200);

    // Bad input changes nothing: cascade must be said, and a reason given.
    const orphan = await fleet.call<{ path: string }>('POST', '/api/v1/targets/web-eu-1/delete', {
      cascade: false,
      reason: 'x',
    });
    expect([orphan.status, orphan.body.path]).toEqual([400, 'cascade']);
    const silent = await fleet.call<{ path: string }>('POST', '/api/v1/targets/web-eu-1/delete', {
      cascade: true,
    });
    expect([silent.status, silent.body.path]).toEqual([400, 'reason']);
    expect((await assignments('eu-1')).deletions).toBeUndefined();

    const asked = await fleet.call<TargetDeletionView>(
      'POST',
      '/api/v1/targets/web-eu-1/delete',
      { cascade: true, reason: 'decommissioning eu-1' },
      'alice',
    );
    expect(asked.status).toBe(202);
    expect(asked.body).toMatchObject({ target: 'web-eu-1', state: 'Pending', requestedBy: 'user:alice' });
    const again = await fleet.call('POST', '/api/v1/targets/web-eu-1/delete', {
      cascade: true,
      reason: 'twice',
    });
    expect(again.status).toBe(409);
    // A sync of it could never run (its agent gets a tombstone): refused alone, skipped in a batch.
    const sync = await fleet.call<{ code: string }>('POST', '/api/v1/targets/web-eu-1/sync', { reason: 'x' });
    expect([sync.status, sync.body.code]).toEqual([409, 'target-deleting']);
    const batch = await fleet.call<{ targets: string[]; skipped: { target: string; reason: string }[] }>(
      'POST',
      '/api/v1/targets/sync',
      { reason: 'x', appSet: 'web', preview: true },
    );
    expect(batch.body.skipped).toEqual([{ target: 'web-eu-1', reason: 'is being deleted with its objects' }]);
    expect(batch.body.targets).not.toContain('web-eu-1');

    // eu-1 gets the tombstone instead of the assignment; us-1 sees nothing of it.
    await expect
      .poll(async () => {
        const a = await assignments('eu-1');
        return { names: a.assignments.map((x) => x.name), deletions: a.deletions };
      }, poll)
      .toEqual({
        names: [],
        deletions: [
          {
            id: asked.body.deletionId,
            targetId: assigned.targetId,
            name: 'web-eu-1',
            namespace: 'web',
            bundleDigest: assigned.bundleDigest,
          },
        ],
      });
    const us = await assignments('us-1');
    expect([us.assignments.map((x) => x.name), us.deletions]).toEqual([['web-us-1'], undefined]);

    const deletion = (outcome: 'Succeeded' | 'Failed', deletionId: string): Report => ({
      type: 'deletion',
      id: randomUUID(),
      targetId: assigned.targetId,
      deletionId,
      at,
      outcome,
      startedAt: at,
      finishedAt: at,
      message: outcome === 'Succeeded' ? '1 object(s) deleted, 0 kept' : 'wave 0: not gone',
      resources: [
        {
          group: '',
          kind: 'ConfigMap',
          namespace: 'web',
          name: 'web-config',
          action: 'deleted',
          message: '',
        },
      ],
    });
    const db = fleet.hub.app.get(Database).prisma;
    // Another cluster's agent cannot complete eu-1's deletion: refused, audited, the target stays.
    expect((await report('us-1', [deletion('Succeeded', asked.body.deletionId)])).status).toBe(200);
    expect(await db.target.findUnique({ where: { id: assigned.targetId } })).not.toBeNull();
    expect(
      (await auditOf('agent.access-denied')).map((e) => [e.actor, e.scope, e.details['type']]),
    ).toContainEqual(['agent:us-1', 'target:web-eu-1', 'deletion']);
    // Nor does a report naming another deletion id.
    expect((await report('eu-1', [deletion('Succeeded', 'not-this-one')])).status).toBe(200);
    expect(await db.target.findUnique({ where: { id: assigned.targetId } })).not.toBeNull();

    // A comparison the agent made before the deletion, delivered in the same batch: nothing of the
    // target is left to write it to, and the batch goes through.
    const comparison: Report = {
      type: 'comparison',
      id: randomUUID(),
      targetId: assigned.targetId,
      at,
      revision: assigned.revision,
      bundleDigest: assigned.bundleDigest,
      inSync: true,
      compared: 1,
      objects: [],
      truncated: false,
    };
    const last = await report('eu-1', [comparison, deletion('Succeeded', asked.body.deletionId)]);
    expect([last.status, last.body.accepted]).toEqual([200, 2]);
    expect(await db.target.findUnique({ where: { id: assigned.targetId } })).toBeNull();
    const done = await auditOf('target.deleted');
    expect(done.map((e) => [e.actor, e.scope, e.details['requestedBy'], e.details['reason']])).toEqual([
      ['agent:eu-1', 'target:web-eu-1', 'user:alice', 'decommissioning eu-1'],
    ]);
    expect(done[0]?.details['deleted']).toEqual(['ConfigMap/web/web-config']);
    expect((await auditOf('target.deletion-requested')).map((e) => [e.actor, e.scope])).toEqual([
      ['user:alice', 'target:web-eu-1'],
    ]);
    // History outlives the target.
    const runs = await fleet.call<{ items: { target: string }[] }>(
      'GET',
      '/api/v1/sync-runs?target=web-eu-1',
    );
    expect(runs.body.items.map((r) => r.target)).toEqual(['web-eu-1']);
    await expect.poll(async () => (await assignments('eu-1')).deletions, poll).toBeUndefined();
  });

  it('an appset with Argo CD’s resources finalizer deletes with their objects the targets its expansion removes, and its own targets when it is deleted', async () => {
    const appSet = (clusters: string[]) => ({
      apiVersion: 'flotilla.dev/v1alpha1',
      kind: 'ApplicationSet',
      metadata: { name: 'api' },
      spec: {
        generators: [{ list: { elements: clusters.map((cluster) => ({ cluster })) } }],
        template: {
          metadata: { name: 'api-{{cluster}}', finalizers: ['resources-finalizer.argocd.argoproj.io'] },
          spec: {
            source: { repoURL: fleet.repo.url, targetRevision: 'main', path: 'app' },
            destination: { name: '{{cluster}}', namespace: 'api' },
          },
        },
      },
    });
    expect((await fleet.call('POST', '/api/v1/appsets', appSet(['eu-1', 'us-1']))).status).toBe(201);
    await expect
      .poll(async () => (await assignments('us-1')).assignments.map((a) => a.name).includes('api-us-1'), poll)
      .toBe(true);
    const served = (await assignments('us-1')).assignments.find((a) => a.name === 'api-us-1')!;

    expect((await fleet.call('POST', '/api/v1/appsets', appSet(['eu-1']))).status).toBe(200);
    await expect
      .poll(async () => {
        const a = await assignments('us-1');
        return [a.assignments.some((x) => x.name === 'api-us-1'), a.deletions?.map((d) => d.name)];
      }, poll)
      .toEqual([false, ['api-us-1']]);
    const tombstone = (await assignments('us-1')).deletions![0]!;
    expect([tombstone.targetId, tombstone.bundleDigest, tombstone.namespace]).toEqual([
      served.targetId,
      served.bundleDigest,
      'api',
    ]);
    expect(
      (await auditOf('target.deletion-requested'))
        .filter((e) => e.scope === 'target:api-us-1')
        .map((e) => [e.actor, e.details['appSet'], e.details['deletionId']]),
    ).toEqual([['system:expansion', 'api', tombstone.id]]);
    // eu-1 keeps its api target; the expansion does not remove the deleting one twice.
    expect((await assignments('eu-1')).assignments.map((a) => a.name)).toContain('api-eu-1');
    const at = new Date().toISOString();
    const done: Report = {
      type: 'deletion',
      id: randomUUID(),
      targetId: tombstone.targetId,
      deletionId: tombstone.id,
      at,
      outcome: 'Succeeded',
      startedAt: at,
      finishedAt: at,
      message: '',
      resources: [],
    };
    expect((await report('us-1', [done])).status).toBe(200);
    expect(
      await fleet.hub.app.get(Database).prisma.target.findUnique({ where: { id: tombstone.targetId } }),
    ).toBeNull();

    // Deleting the appset itself: it stays Deleting until its last target's agent reports.
    const eu = (await assignments('eu-1')).assignments.find((a) => a.name === 'api-eu-1')!;
    expect((await fleet.call('DELETE', '/api/v1/appsets/api')).status).toBeLessThan(300);
    const deletingSet = await fleet.call<{ status: string }>('GET', '/api/v1/appsets/api');
    expect([deletingSet.status, deletingSet.body.status]).toEqual([200, 'Deleting']);
    expect((await fleet.call<{ code: string }>('POST', '/api/v1/appsets', appSet(['eu-1']))).body.code).toBe(
      'appset-deleting',
    );
    await expect
      .poll(async () => (await assignments('eu-1')).deletions?.map((d) => d.name), poll)
      .toEqual(['api-eu-1']);
    const last = (await assignments('eu-1')).deletions![0]!;
    expect(last.targetId).toBe(eu.targetId);
    expect(
      (await report('eu-1', [{ ...done, id: randomUUID(), targetId: last.targetId, deletionId: last.id }]))
        .status,
    ).toBe(200);
    expect((await fleet.call('GET', '/api/v1/appsets/api')).status).toBe(404);
    expect(
      (await auditOf('appset.deleted')).map((e) => [
        e.actor,
        e.scope,
        e.details['afterTargetsDeleted'] ?? null,
      ]),
    ).toEqual([
      ['agent:eu-1', 'appset:api', true],
      ['user:admin', 'appset:api', null],
    ]);
  });

  it('a failed deletion keeps the target, with the agent’s message, and neither assigns nor deletes it', async () => {
    await expect
      .poll(async () => (await assignments('us-1')).assignments.map((a) => a.name), poll)
      .toEqual(['web-us-1']);
    const assigned = (await assignments('us-1')).assignments[0]!;
    const asked = await fleet.call<TargetDeletionView>('POST', '/api/v1/targets/web-us-1/delete', {
      cascade: true,
      reason: 'moving',
    });
    expect(asked.status).toBe(202);
    const at = new Date().toISOString();
    const failed: Report = {
      type: 'deletion',
      id: randomUUID(),
      targetId: assigned.targetId,
      deletionId: asked.body.deletionId,
      at,
      outcome: 'Failed',
      startedAt: at,
      finishedAt: at,
      message: 'PreDelete hook failed: batch/Job web/drain: BackoffLimitExceeded; nothing deleted',
      resources: [],
    };
    expect((await report('us-1', [failed])).status).toBe(200);
    const row = await fleet.hub.app
      .get(Database)
      .prisma.target.findUniqueOrThrow({ where: { id: assigned.targetId } });
    expect([row.deletionState, row.deletionMessage]).toEqual(['Failed', failed.message]);
    const listed = await fleet.call<{ name: string; reason: { code: string; message: string } | null }[]>(
      'GET',
      '/api/v1/targets?appSet=web',
    );
    expect(listed.body.find((t) => t.name === 'web-us-1')?.reason).toEqual({
      code: 'DeletionFailed',
      message: `deletion failed: ${failed.message}; left as it is until a person asks again`,
    });
    expect((await auditOf('target.deletion-failed')).map((e) => [e.scope, e.details['message']])).toEqual([
      ['target:web-us-1', failed.message],
    ]);
    await expect
      .poll(async () => {
        const a = await assignments('us-1');
        return [a.assignments.length, a.deletions];
      }, poll)
      .toEqual([0, undefined]);
    // Asked again, it is served again, and the target says it is being deleted.
    const retry = await fleet.call('POST', '/api/v1/targets/web-us-1/delete', {
      cascade: true,
      reason: 'again',
    });
    expect(retry.status).toBe(202);
    await expect.poll(async () => (await assignments('us-1')).deletions?.length, poll).toBe(1);
    const again = await fleet.call<{ name: string; reason: { code: string } | null }[]>(
      'GET',
      '/api/v1/targets?appSet=web',
    );
    expect(again.body.find((t) => t.name === 'web-us-1')?.reason?.code).toBe('Deleting');

    // A new commit moves what Git wants, but a target being deleted is no longer released: its
    // tombstone keeps naming the bundle its agent last ran.
    const digestBefore = (await assignments('us-1')).deletions?.[0]?.bundleDigest;
    const second = fleet.repo.commit(
      {
        'app/config.yaml':
          'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web-config\ndata:\n  owner: apps\n',
      },
      'owner apps',
    );
    const repos = await fleet.call<{ id: string }[]>('GET', '/api/v1/repositories');
    for (const r of repos.body) await fleet.call('POST', `/api/v1/repositories/${r.id}/refresh`);
    const usTarget = async () =>
      (
        await fleet.call<{ name: string; desiredRevision: string; releasedRevision: string | null }[]>(
          'GET',
          '/api/v1/targets?appSet=web',
        )
      ).body.find((t) => t.name === 'web-us-1');
    await expect.poll(async () => (await usTarget())?.desiredRevision, poll).toBe(second);
    expect((await usTarget())?.releasedRevision).not.toBe(second);
    expect((await assignments('us-1')).deletions?.[0]?.bundleDigest).toBe(digestBefore);
  });

  it(
    'a target its appset still declares comes back once its deletion is done, without waiting for a commit',
    { timeout: 90_000 },
    async () => {
      // The previous test left web-us-1 being deleted again; its appset still declares it.
      await expect.poll(async () => (await assignments('us-1')).deletions?.length, poll).toBe(1);
      const tombstone = (await assignments('us-1')).deletions![0]!;
      const at = new Date().toISOString();
      const done: Report = {
        type: 'deletion',
        id: randomUUID(),
        targetId: tombstone.targetId,
        deletionId: tombstone.id,
        at,
        outcome: 'Succeeded',
        startedAt: at,
        finishedAt: at,
        message: '',
        resources: [],
      };
      expect((await report('us-1', [done])).status).toBe(200);
      const db = fleet.hub.app.get(Database).prisma;
      expect(await db.target.findUnique({ where: { id: tombstone.targetId } })).toBeNull();
      // Nothing else moves (no commit, no refresh): the deletion itself asks for the appset's expansion.
      await expect
        .poll(async () => (await assignments('us-1')).assignments.map((a) => a.name), poll)
        .toEqual(['web-us-1']);
      const back = (await assignments('us-1')).assignments[0]!;
      expect(back.targetId).not.toBe(tombstone.targetId);
      expect((await assignments('us-1')).deletions).toBeUndefined();
    },
  );
});
