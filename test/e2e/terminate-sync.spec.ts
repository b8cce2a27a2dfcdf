import type { TargetOperationView } from '@flotilla/contract';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GuestbookFleet } from '../support/guestbook-fleet.js';

interface Run {
  trigger: string;
  outcome: string;
  message: string;
  resources: { kind: string; name: string; action: string }[];
}

/**
 * Terminating a requested sync while its agent runs it (Argo CD's `app terminate-op`): the guestbook
 * gets a Pod in an early wave that never becomes ready in kube-sim, so the sync waits on that wave
 * and gives the test its window. All real processes: hub on PostgreSQL and Redis, agent, kube-sim,
 * git daemon.
 */
describe('terminating a requested sync', () => {
  let e2e: GuestbookFleet;
  const target = () => `${e2e.fleet.clusters[0]!.name}-guestbook`;
  const operations = () => e2e.operations(target());
  const runs = () => e2e.syncRuns<Run>(target());
  const exists = async (kind: string, name: string) => (await e2e.kubectl(0, 'get', kind, name)).code === 0;

  beforeAll(async () => {
    e2e = await GuestbookFleet.start({ name: 'terminate', clusters: 1, pollSeconds: 1 });
    // Wave -1: the Deployment, Service and ConfigMap (wave 0) come only once this Pod is ready,
    // which in kube-sim an `-unready` image never is.
    writeFileSync(
      join(e2e.repoDir, 'apps/guestbook/gate.yaml'),
      [
        'apiVersion: v1',
        'kind: Pod',
        'metadata:',
        '  name: gate',
        '  namespace: guestbook',
        '  annotations:',
        '    argocd.argoproj.io/sync-wave: "-1"',
        'spec:',
        '  containers:',
        '    - name: gate',
        '      image: busybox:1.36-unready',
        '',
      ].join('\n'),
    );
    await e2e.repo.add('.').commit('a gate that never opens');
    await e2e.createAppSet({});
  }, 120_000);
  afterAll(async () => {
    await e2e?.stop();
  });

  it('stops a run waiting on a wave, reports it Terminated with what it applied, and applies nothing more', async () => {
    await expect
      .poll(async () => (await e2e.fleet.api.targets()).map((t) => Boolean(t.desiredRevision)), {
        timeout: 60_000,
      })
      .toEqual([true]);
    const asked = await e2e.flotilla('sync', target(), '--reason', 'CHG-50', '-o', 'json');
    expect(asked.code).toBe(0);
    const op = JSON.parse(asked.stdout) as TargetOperationView;
    // The run is going: its first wave is applied and waits for the Pod to be ready.
    await expect.poll(() => exists('pod', 'gate'), { timeout: 60_000 }).toBe(true);
    expect(await exists('deployment', 'guestbook-ui')).toBe(false);

    const stopped = await e2e.flotilla(
      'sync',
      '--terminate',
      op.id,
      '--reason',
      'wrong change window',
      '--wait',
      '--timeout',
      '90',
    );
    expect(stopped.stderr).not.toContain('flotilla sync:');
    expect(stopped.code).toBe(0);
    expect(stopped.stdout).toMatch(/State:?\s+Terminated/);
    expect(stopped.stdout).toMatch(/Terminate:?\s+asked by .+: wrong change window/);

    const [closed] = await operations();
    expect(closed).toMatchObject({ id: op.id, state: 'Terminated' });
    expect(closed!.message).toMatch(/^terminated by .+: wrong change window/);
    // The run in history says what it applied before it stopped; the later wave never came.
    const manual = (await runs()).filter((r) => r.trigger === 'manual');
    expect(manual).toHaveLength(1);
    expect(manual[0]!.outcome).toBe('Terminated');
    expect(manual[0]!.resources.map((r) => `${r.kind}/${r.name}:${r.action}`)).toEqual([
      'Namespace/guestbook:applied',
      'Pod/gate:applied',
    ]);
    expect(await exists('deployment', 'guestbook-ui')).toBe(false);
    expect(await exists('configmap', 'guestbook-config')).toBe(false);

    // One current reason says who stopped it, in the API and the CLI column.
    const [t] = await e2e.fleet.api.targets();
    expect(t?.reason).toMatchObject({ code: 'SyncFailed' });
    expect((t?.reason as { message: string }).message).toMatch(/^terminated by .+: wrong change window/);
    const listed = await e2e.flotilla('targets');
    expect(listed.stdout).toMatch(/SyncFailed/);

    const audit = await e2e.fleet.api.request<{
      items: { action: string; details: Record<string, unknown> }[];
    }>('GET', `/api/v1/audit?scope=target:${target()}`);
    const actions = audit.items.map((e) => e.action);
    expect(actions).toEqual(
      expect.arrayContaining([
        'target.sync-terminate-requested',
        'target.sync-request-done',
        'sync.terminated',
      ]),
    );
    expect(audit.items.find((e) => e.action === 'target.sync-request-done')!.details).toMatchObject({
      operationId: op.id,
      outcome: 'Terminated',
    });

    // Finished: a second terminate is refused and changes nothing.
    const again = await e2e.flotilla('sync', '--terminate', op.id, '--reason', 'twice');
    expect(again.code).not.toBe(0);
    expect(again.stderr).toContain('only a Pending one can be terminated');
  }, 240_000);

  it('a request terminated before its agent started it is closed Terminated, nothing applied', async () => {
    // The gate of the previous test is still there: remove it so a real run would change things.
    await e2e.kubectl(0, 'delete', 'pod', 'gate');
    await e2e.fleet.stopAgent(0);
    const asked = await e2e.flotilla('sync', target(), '--reason', 'CHG-51', '-o', 'json');
    const op = JSON.parse(asked.stdout) as TargetOperationView;
    const terminated = await e2e.flotilla(
      'sync',
      '--terminate',
      op.id,
      '--reason',
      'changed my mind',
      '-o',
      'json',
    );
    expect(terminated.code).toBe(0);
    expect(JSON.parse(terminated.stdout)).toMatchObject({
      state: 'Pending',
      terminate: { reason: 'changed my mind' },
    });
    e2e.fleet.resumeAgent(0);
    await expect
      .poll(async () => (await operations()).find((o) => o.id === op.id)?.state, { timeout: 90_000 })
      .toBe('Terminated');
    const closed = (await operations()).find((o) => o.id === op.id)!;
    expect(closed.message).toMatch(/^terminated by .+: changed my mind before it started; nothing applied$/);
    const manual = (await runs()).filter((r) => r.trigger === 'manual');
    expect(manual).toHaveLength(2);
    expect(manual[0]).toMatchObject({ outcome: 'Terminated', resources: [] });
    expect(await exists('pod', 'gate')).toBe(false);
    expect(await exists('deployment', 'guestbook-ui')).toBe(false);
  }, 240_000);
});
