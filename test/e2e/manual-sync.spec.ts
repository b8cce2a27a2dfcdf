import type { TargetOperationView } from '@flotilla/contract';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GuestbookFleet } from '../support/guestbook-fleet.js';

interface Run {
  trigger: string;
  outcome: string;
  revision: string;
}

/**
 * Automated sync off, as many teams run production: the agent compares and applies nothing; a
 * person syncs. All real processes (hub on PostgreSQL and Redis, agents, kube-sim, git daemon).
 */
describe('manual sync (automated off)', () => {
  let e2e: GuestbookFleet;
  const targetOf = (i: number) => `${e2e.fleet.clusters[i]!.name}-guestbook`;
  const operations = (target: string) => e2e.operations(target);
  const runs = (target: string) => e2e.syncRuns<Run>(target);

  beforeAll(async () => {
    e2e = await GuestbookFleet.start({
      name: 'manual',
      clusters: 2,
      pollSeconds: 1,
      labels: (i) => ({ ring: i === 0 ? 'canary' : 'main' }),
    });
    await e2e.createAppSet({});
  }, 120_000);
  afterAll(async () => {
    await e2e?.stop();
  });

  it('applies nothing until someone syncs; the sync then runs once, with who and why', async () => {
    const target = targetOf(0);
    // Rendered and released, but never applied: no Deployment on either cluster.
    await expect
      .poll(async () => (await e2e.fleet.api.targets()).map((t) => Boolean(t.desiredRevision)), {
        timeout: 60_000,
      })
      .toEqual([true, true]);
    await new Promise((r) => setTimeout(r, 3_000));
    expect(await e2e.images()).toEqual([undefined, undefined]);

    const synced = await e2e.flotilla(
      'sync',
      target,
      '--reason',
      'release review CHG-42',
      '--wait',
      '--timeout',
      '90',
    );
    expect(synced.stderr).not.toContain('flotilla sync:');
    expect(synced.code).toBe(0);
    expect(synced.stdout).toMatch(/State:?\s+Succeeded/);
    expect((await e2e.images())[0]).toBe('ghcr.io/example/guestbook-ui:1.0.0');
    // Only the target asked for: the other cluster still runs nothing.
    expect((await e2e.images())[1]).toBeUndefined();

    const [op] = await operations(target);
    expect(op).toMatchObject({ state: 'Succeeded', reason: 'release review CHG-42' });
    // Once: one manual run, however many polls carried the operation.
    await new Promise((r) => setTimeout(r, 3_000));
    expect((await runs(target)).filter((r) => r.trigger === 'manual')).toEqual([
      expect.objectContaining({ outcome: 'Succeeded' }),
    ]);
    const audit = await e2e.fleet.api.request<{
      items: { action: string; details: Record<string, unknown> }[];
    }>('GET', `/api/v1/audit?scope=target:${target}`);
    expect(audit.items.map((e) => e.action)).toEqual(
      expect.arrayContaining(['target.sync-requested', 'target.sync-request-done']),
    );
    const done = audit.items.find((e) => e.action === 'target.sync-request-done')!;
    expect(done.details).toMatchObject({
      outcome: 'Succeeded',
      reason: 'release review CHG-42',
      operationId: op!.id,
    });
  }, 180_000);

  it('a sync asked for while the agent is stopped runs exactly once when it is back', async () => {
    const target = targetOf(1);
    await e2e.fleet.stopAgent(1);
    const asked = await e2e.flotilla('sync', target, '--reason', 'agent was down', '-o', 'json');
    expect(asked.code).toBe(0);
    const op = JSON.parse(asked.stdout) as TargetOperationView;
    expect(op.state).toBe('Pending');
    await new Promise((r) => setTimeout(r, 2_000));
    expect((await operations(target))[0]?.state).toBe('Pending');
    expect((await e2e.images())[1]).toBeUndefined();

    e2e.fleet.resumeAgent(1);
    await expect
      .poll(async () => (await operations(target))[0]?.state, { timeout: 90_000 })
      .toBe('Succeeded');
    expect((await e2e.images())[1]).toBe('ghcr.io/example/guestbook-ui:1.0.0');
    // Restart it once more: the operation is in its assignments until the hub closed it, and in its
    // state as started, so nothing runs twice.
    await e2e.fleet.stopAgent(1);
    e2e.fleet.resumeAgent(1);
    await new Promise((r) => setTimeout(r, 5_000));
    expect((await runs(target)).filter((r) => r.trigger === 'manual')).toHaveLength(1);
  }, 240_000);

  it('refuses bad requests, changing nothing', async () => {
    const noReason = await e2e.flotilla('sync', targetOf(0));
    expect([noReason.code, noReason.stderr.trim()]).toEqual([
      2,
      'flotilla sync: --reason is required (it goes to the audit log and the history)',
    ]);
    const missing = await e2e.flotilla('sync', 'no-such-target', '--reason', 'x');
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain('404');
    const bad = await e2e.fleet.api
      .request('POST', `/api/v1/targets/${targetOf(0)}/sync`, { reason: 'x', prune: 'yes' })
      .catch((e: Error) => e.message);
    expect(String(bad)).toContain('prune');
    expect(await operations(targetOf(0))).toHaveLength(1);
  });

  it('a dry-run sync says what it would change, and changes nothing', async () => {
    const target = targetOf(0);
    const next = await e2e.commitImageTag('1.1.0');
    await expect
      .poll(async () => (await e2e.fleet.api.targets()).find((t) => t.name === target)?.desiredRevision, {
        timeout: 60_000,
      })
      .toBe(next);
    const asked = await e2e.flotilla(
      'sync',
      target,
      '--reason',
      'preview CHG-43',
      '--dry-run',
      '--wait',
      '--timeout',
      '90',
      '-o',
      'json',
    );
    expect(asked.stderr).toBe('');
    expect(asked.code).toBe(0);
    const op = JSON.parse(asked.stdout) as TargetOperationView & {
      dryRun: boolean;
      resources: { kind: string; name: string; action: string; message: string }[];
    };
    expect(op).toMatchObject({ state: 'Succeeded', dryRun: true });
    expect(op.resources).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ kind: 'Deployment', name: 'guestbook-ui', message: 'would be changed' }),
      ]),
    );
    // Nothing changed: the cluster runs the old image, the target is still OutOfSync, and history
    // holds the run marked as a dry run, not as the target's last sync.
    expect((await e2e.images())[0]).toBe('ghcr.io/example/guestbook-ui:1.0.0');
    expect((await e2e.fleet.api.targets()).find((t) => t.name === target)?.syncStatus).toBe('OutOfSync');
    const [newest] = await e2e.fleet.api
      .request<{ items: (Run & { dryRun?: boolean })[] }>('GET', `/api/v1/sync-runs?target=${target}&limit=1`)
      .then((r) => r.items);
    expect(newest).toMatchObject({ trigger: 'manual', outcome: 'Succeeded', revision: next, dryRun: true });
    const audit = await e2e.fleet.api.request<{ items: { action: string }[] }>(
      'GET',
      `/api/v1/audit?scope=target:${target}`,
    );
    expect(audit.items.map((e) => e.action)).toContain('sync.dry-run');

    const table = await e2e.flotilla('sync', target, '--reason', 'preview again', '--dry-run', '--wait');
    expect(table.code).toBe(0);
    expect(table.stdout).toMatch(/^change +apps\/Deployment guestbook\/guestbook-ui$/m);
  }, 180_000);

  it('syncs every target of an appset, or of a cluster selection, in one request', async () => {
    const [canary, main] = [targetOf(0), targetOf(1)];
    // A preview names the targets and asks none.
    const preview = await e2e.flotilla(
      'sync',
      '--appset',
      'guestbook',
      '--selector',
      'ring=main',
      '--reason',
      'which ones?',
      '--preview',
      '-o',
      'json',
    );
    expect(preview.code).toBe(0);
    expect(JSON.parse(preview.stdout)).toEqual({
      batchId: null,
      preview: true,
      targets: [main],
      operations: [],
      skipped: [],
    });
    const before = await Promise.all([operations(canary), operations(main)]);

    const asked = await e2e.flotilla(
      'sync',
      '--appset',
      'guestbook',
      '--reason',
      'fleet release CHG-44',
      '--wait',
      '--timeout',
      '120',
      '-o',
      'json',
    );
    expect(asked.stderr).toBe('');
    expect(asked.code).toBe(0);
    const bulk = JSON.parse(asked.stdout) as { batchId: string; operations: TargetOperationView[] };
    expect(bulk.operations.map((o) => [o.target, o.state, o.batchId])).toEqual([
      [canary, 'Succeeded', bulk.batchId],
      [main, 'Succeeded', bulk.batchId],
    ]);
    // Both clusters now run what Git wants (1.1.0 since the dry-run test's commit).
    expect(await e2e.images()).toEqual([
      'ghcr.io/example/guestbook-ui:1.1.0',
      'ghcr.io/example/guestbook-ui:1.1.0',
    ]);
    // The batch reads back in one request, by target name.
    const batch = await e2e.fleet.api.request<TargetOperationView[]>(
      'GET',
      `/api/v1/operations?batchId=${bulk.batchId}`,
    );
    expect(batch.map((o) => [o.target, o.state])).toEqual([
      [canary, 'Succeeded'],
      [main, 'Succeeded'],
    ]);
    const notABatch = await e2e.fleet.api
      .request('GET', '/api/v1/operations?batchId=nope')
      .catch((e: Error) => e.message);
    expect(String(notABatch)).toContain('batchId');
    const after = await Promise.all([operations(canary), operations(main)]);
    expect(after.map((ops, i) => ops.length - before[i]!.length)).toEqual([1, 1]);
    const audit = await e2e.fleet.api.request<{
      items: { action: string; details: Record<string, unknown> }[];
    }>('GET', `/api/v1/audit?scope=target:${main}&action=target.sync-requested`);
    expect(audit.items[0]?.details).toMatchObject({
      batchId: bulk.batchId,
      selection: { appSet: 'guestbook' },
      reason: 'fleet release CHG-44',
    });

    // Bad selections are refused, naming the field, and ask nothing.
    const none = await e2e.fleet.api
      .request('POST', '/api/v1/targets/sync', { reason: 'x' })
      .catch((e: Error) => e.message);
    expect(String(none)).toContain('appSet');
    const nothing = await e2e.flotilla('sync', '--selector', 'ring=nowhere', '--reason', 'x');
    expect(nothing.code).toBe(1);
    expect(nothing.stderr).toContain('no target is on a cluster matching clusterSelector');
    const both = await e2e.flotilla('sync', canary, '--appset', 'guestbook', '--reason', 'x');
    expect(both.code).toBe(2);
    expect((await operations(canary)).length).toBe(after[0].length);
  }, 240_000);

  it('a request withdrawn before its agent ran it never runs', async () => {
    const target = targetOf(0);
    const manualRuns = async () => (await runs(target)).filter((r) => r.trigger === 'manual').length;
    const runsBefore = await manualRuns();
    await e2e.fleet.stopAgent(0);
    const op = await e2e.fleet.api.request<TargetOperationView>('POST', `/api/v1/targets/${target}/sync`, {
      reason: 'wrong target',
    });
    const cancelled = await e2e.flotilla(
      'sync',
      '--cancel',
      op.id,
      '--reason',
      'asked by mistake',
      '-o',
      'json',
    );
    expect(cancelled.code).toBe(0);
    expect(JSON.parse(cancelled.stdout)).toMatchObject({ id: op.id, state: 'Cancelled' });
    const again = await e2e.flotilla('sync', '--cancel', op.id, '--reason', 'twice');
    expect(again.code).toBe(1);
    expect(again.stderr).toContain('only a Pending one can be cancelled');
    const unknown = await e2e.flotilla('sync', '--cancel', 'no-such-operation', '--reason', 'x');
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toContain('404');

    // Back online, the agent gets its assignments without it: a later request runs, the withdrawn
    // one never does.
    e2e.fleet.resumeAgent(0);
    const later = await e2e.fleet.api.request<TargetOperationView>('POST', `/api/v1/targets/${target}/sync`, {
      reason: 'the right one',
    });
    await expect
      .poll(async () => (await operations(target)).find((o) => o.id === later.id)?.state, {
        timeout: 90_000,
      })
      .toBe('Succeeded');
    expect((await operations(target)).find((o) => o.id === op.id)?.state).toBe('Cancelled');
    expect(await manualRuns()).toBe(runsBefore + 1);
    const audit = await e2e.fleet.api.request<{
      items: { action: string; details: Record<string, unknown> }[];
    }>('GET', `/api/v1/audit?scope=target:${target}&action=target.sync-cancelled`);
    expect(audit.items[0]?.details).toMatchObject({ operationId: op.id, reason: 'asked by mistake' });
  }, 240_000);
});
