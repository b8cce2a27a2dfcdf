import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TargetDiffView } from '@flotilla/contract';
import { GuestbookFleet } from '../support/guestbook-fleet.js';

/**
 * Automated sync off means "show, don't apply": the agent compares what Git wants with what runs,
 * the hub shows OutOfSync and `flotilla diff TARGET` the change, and nothing is applied until a
 * person syncs. All real processes (hub on PostgreSQL and Redis, agent, kube-sim, git daemon).
 */
describe('live diff (automated off)', () => {
  let e2e: GuestbookFleet;
  const target = () => `${e2e.fleet.clusters[0]!.name}-guestbook`;
  const status = async () => (await e2e.fleet.api.targets()).find((t) => t.name === target());
  const sync = (reason: string) =>
    e2e.flotilla('sync', target(), '--reason', reason, '--wait', '--timeout', '90');

  beforeAll(async () => {
    e2e = await GuestbookFleet.start({ name: 'livediff', clusters: 1, pollSeconds: 1 });
    await e2e.createAppSet({});
  }, 120_000);
  afterAll(async () => {
    await e2e?.stop();
  });

  it('never synced: OutOfSync from the agent comparison, not Unknown, and the diff shows every object', async () => {
    await expect.poll(async () => (await status())?.syncStatus, { timeout: 60_000 }).toBe('OutOfSync');
    expect((await status())?.lastSyncedAt).toBeNull();
    const shown = await e2e.flotilla('diff', target(), '--exit-code');
    expect(shown.code).toBe(1);
    expect(shown.stdout).toContain(
      `--- live/apps.v1.Deployment.guestbook.guestbook-ui\n+++ desired/apps.v1.Deployment.guestbook.guestbook-ui\n@@ -0,0 +1,`,
    );
    expect(shown.stdout).toMatch(/^\+ +- image: ghcr\.io\/example\/guestbook-ui:1\.0\.0$/m);
    expect(await e2e.images()).toEqual([undefined]);

    const synced = await sync('first release CHG-50');
    expect([synced.code, synced.stderr.includes('flotilla sync:')]).toEqual([0, false]);
    await expect
      .poll(async () => (await e2e.flotilla('diff', target(), '--exit-code')).code, { timeout: 30_000 })
      .toBe(0);
    const clean = await e2e.flotilla('diff', target(), '--exit-code');
    expect(clean.stdout).toBe('');
    expect((await status())?.syncStatus).toBe('Synced');
  }, 180_000);

  it('a commit changes the image: OutOfSync, the diff names the image line, nothing applied until synced', async () => {
    const next = await e2e.commitImageTag('1.1.0');
    await expect.poll(async () => (await status())?.desiredRevision, { timeout: 60_000 }).toBe(next);
    await expect
      .poll(async () => (await e2e.flotilla('diff', target(), '--exit-code')).code, { timeout: 30_000 })
      .toBe(1);
    expect((await status())?.syncStatus).toBe('OutOfSync');
    const shown = await e2e.flotilla('diff', target(), '--exit-code');
    expect(shown.stdout).toMatch(
      /^-( +)- image: ghcr\.io\/example\/guestbook-ui:1\.0\.0\n\+\1- image: ghcr\.io\/example\/guestbook-ui:1\.1\.0$/m,
    );
    // Only the Deployment changes, and only its image.
    expect(shown.stdout.match(/^diff -u -N /gm)).toHaveLength(1);
    expect(shown.stderr).toMatch(/1 of 4 object\(s\) differ/);
    const json = JSON.parse((await e2e.flotilla('diff', target(), '-o', 'json')).stdout) as TargetDiffView;
    expect(json.comparison).toMatchObject({ revision: next, current: true, inSync: false, compared: 4 });
    expect(json.comparison?.objects.map((o) => [o.kind, o.name, o.action, o.paths])).toEqual([
      ['Deployment', 'guestbook-ui', 'change', ['/spec/template/spec/containers/0/image']],
    ]);
    // Shown, not applied.
    expect(await e2e.images()).toEqual(['ghcr.io/example/guestbook-ui:1.0.0']);

    const synced = await sync('release review CHG-51');
    expect([synced.code, synced.stderr.includes('flotilla sync:')]).toEqual([0, false]);
    expect(await e2e.images()).toEqual(['ghcr.io/example/guestbook-ui:1.1.0']);
    await expect
      .poll(async () => (await e2e.flotilla('diff', target(), '--exit-code')).code, { timeout: 30_000 })
      .toBe(0);
    expect((await status())?.syncStatus).toBe('Synced');
  }, 180_000);
});
