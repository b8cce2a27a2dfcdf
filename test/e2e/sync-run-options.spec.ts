import type { TargetOperationView } from '@flotilla/contract';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { GuestbookFleet } from '../support/guestbook-fleet.js';

interface Run {
  trigger: string;
  outcome: string;
  message: string;
  resources: { kind: string; name: string; action: string; message: string }[];
}

/**
 * Options of one requested sync (revision, a subset of objects, sync options, force), each either
 * carried out or refused by name. All real processes: hub on PostgreSQL and Redis, agent, kube-sim,
 * git daemon; automated sync off, so only these requests apply anything.
 */
describe('per-run sync options', () => {
  let e2e: GuestbookFleet;
  const target = () => `${e2e.fleet.clusters[0]!.name}-guestbook`;
  const operations = () => e2e.operations(target());
  const runs = () => e2e.syncRuns<Run>(target());
  const exists = async (kind: string, name: string) => (await e2e.kubectl(0, 'get', kind, name)).code === 0;
  const sync = (...args: string[]) =>
    e2e.flotilla('sync', target(), '--reason', 'CHG-60', '--wait', '--timeout', '90', '-o', 'json', ...args);

  beforeAll(async () => {
    e2e = await GuestbookFleet.start({ name: 'runopts', clusters: 1, pollSeconds: 1 });
    await e2e.createAppSet({});
    // A run option is refused (409) until the agent has announced it supports it, on its first
    // long-poll: these tests ask for run options as soon as the target has a revision.
    await vi.waitFor(
      async () => {
        const features = (await e2e.fleet.api.clusters())[0]?.agentFeatures ?? [];
        if (!features.includes('run-resources'))
          throw new Error(`agent features so far: ${features.join(',')}`);
      },
      { timeout: 60_000, interval: 250 },
    );
  }, 120_000);
  afterAll(async () => {
    await e2e?.stop();
  });

  it('--resource applies only the objects named: no others, no hooks, no prune', async () => {
    await expect
      .poll(async () => (await e2e.fleet.api.targets()).map((t) => Boolean(t.desiredRevision)), {
        timeout: 60_000,
      })
      .toEqual([true]);
    const done = await sync(
      '--resource',
      '/Namespace//guestbook',
      '--resource',
      '/ConfigMap/guestbook/guestbook-config',
    );
    expect(done.stderr).not.toContain('flotilla sync:');
    expect(done.code).toBe(0);
    const op = JSON.parse(done.stdout) as TargetOperationView;
    expect(op.state).toBe('Succeeded');
    expect(op.resources).toEqual([
      { group: '', kind: 'Namespace', name: 'guestbook' },
      { group: '', kind: 'ConfigMap', namespace: 'guestbook', name: 'guestbook-config' },
    ]);
    expect(await exists('configmap', 'guestbook-config')).toBe(true);
    expect(await exists('deployment', 'guestbook-ui')).toBe(false);
    expect(await exists('service', 'guestbook-ui')).toBe(false);
    const [run] = await runs();
    expect(run?.message).toMatch(/^selective sync of 2 object\(s\)/);
    expect(run?.resources.filter((r) => r.action === 'applied').map((r) => `${r.kind}/${r.name}`)).toEqual([
      'Namespace/guestbook',
      'ConfigMap/guestbook-config',
    ]);
  }, 180_000);

  it('--resource naming an object the target does not declare is refused, naming it, and asks nothing', async () => {
    const before = (await operations()).length;
    const bad = await sync('--resource', 'apps/Deployment/guestbook/not-there');
    expect(bad.code).not.toBe(0);
    expect(bad.stderr).toContain('apps/Deployment/guestbook/not-there is not declared');
    expect(bad.stderr).toContain('resources[0]');
    const malformed = await sync('--resource', 'Deployment/guestbook-ui');
    expect([malformed.code, malformed.stderr]).toEqual([
      2,
      expect.stringContaining('GROUP/KIND/NAMESPACE/NAME'),
    ]);
    expect(await operations()).toHaveLength(before);
  });

  it('--revision syncs the revision the target is assigned, and refuses any other naming why', async () => {
    const head = await e2e.head();
    const other = await sync('--revision', '0000000');
    expect(other.code).not.toBe(0);
    expect(other.stderr).toContain(`is assigned revision ${head.slice(0, 12)}`);
    expect(other.stderr).toContain('pin the target');
    const done = await sync('--revision', head.slice(0, 10));
    expect(done.code).toBe(0);
    const op = JSON.parse(done.stdout) as TargetOperationView;
    expect([op.state, op.revision]).toEqual(['Succeeded', head]);
    expect(await exists('deployment', 'guestbook-ui')).toBe(true);
  }, 180_000);

  it('--sync-option and --force apply to this run only; refused or unknown options are refused by name', async () => {
    const refused = await sync('--sync-option', 'ClientSideApplyMigration=true');
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toContain('syncOptions[0]');
    expect(refused.stderr).toContain('ClientSideApplyMigration=true is not supported');
    const unknown = await sync('--sync-option', 'Bogus=1');
    expect(unknown.stderr).toContain('unknown option "Bogus"');

    // A new image, so the run writes the Deployment (an object already as Git says is left alone).
    const wantsNew = async (tag: string) => {
      const next = await e2e.commitImageTag(tag);
      await expect
        .poll(async () => (await e2e.fleet.api.targets())[0]?.desiredRevision, { timeout: 60_000 })
        .toBe(next);
    };
    // Everything exists first (as the earlier tests leave it), so this run writes over live objects.
    expect((await sync()).code).toBe(0);
    await wantsNew('1.1.0');
    const replaced = await sync('--sync-option', 'Replace=true');
    expect(replaced.code).toBe(0);
    const op = JSON.parse(replaced.stdout) as TargetOperationView;
    expect([op.state, op.force, op.syncOptions]).toEqual(['Succeeded', false, ['Replace=true']]);
    // The Deployment was written whole (PUT), as Replace=true says, in this run.
    const [run] = await runs();
    expect(run?.resources.find((r) => r.kind === 'Deployment')?.message).toBe('replaced (Replace=true)');
    expect((await e2e.images())[0]).toBe('ghcr.io/example/guestbook-ui:1.1.0');

    // The next run has only --force (Force=true: re-create only what the API refuses to change): the
    // appset's server-side apply again, no replace.
    await wantsNew('1.2.0');
    const forced = await sync('--force');
    expect(forced.code).toBe(0);
    expect(JSON.parse(forced.stdout)).toMatchObject({ state: 'Succeeded', force: true, syncOptions: [] });
    const [next] = await runs();
    expect(next?.resources.find((r) => r.kind === 'Deployment')?.message).toBe('');
    expect((await e2e.images())[0]).toBe('ghcr.io/example/guestbook-ui:1.2.0');

    const audit = await e2e.fleet.api.request<{
      items: { action: string; details: Record<string, unknown> }[];
    }>('GET', `/api/v1/audit?scope=target:${target()}&action=target.sync-requested`);
    expect(audit.items.map((e) => e.details)).toContainEqual(
      expect.objectContaining({ syncOptions: ['Replace=true'] }),
    );
    expect(audit.items.map((e) => e.details)).toContainEqual(
      expect.objectContaining({ force: true, syncPolicy: { force: true } }),
    );
  }, 180_000);
});
