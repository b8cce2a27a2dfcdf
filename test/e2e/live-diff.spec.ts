import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TargetDiffView } from '@flotilla/contract';
import { REPO_ROOT } from '@flotilla/cli/fleet';
import { GuestbookFleet } from '../support/guestbook-fleet.js';

const CLI = join(REPO_ROOT, 'apps/cli/dist/main.js');

/**
 * Automated sync off means "show, don't apply": the agent compares what Git wants with what runs,
 * the hub shows OutOfSync and `flotilla diff TARGET` the change, and nothing is applied until a
 * person syncs. All real processes (hub on PostgreSQL and Redis, agent, kube-sim, git daemon).
 */
describe('live diff (automated off)', () => {
  let e2e: GuestbookFleet;
  const target = () => `${e2e.fleet.clusters[0]!.name}-guestbook`;
  const status = async () => (await e2e.fleet.api.targets()).find((t) => t.name === target());
  const flotilla = async (...args: string[]) => {
    try {
      const r = await promisify(execFile)(process.execPath, [CLI, ...args], {
        env: {
          ...process.env,
          FLOTILLA_HUB_URL: e2e.fleet.hubUrl,
          FLOTILLA_CONFIG: '/nonexistent/flotilla.yaml',
        },
        timeout: 120_000,
      });
      return { code: 0, out: r.stdout, err: r.stderr };
    } catch (e) {
      const f = e as { code?: number; stdout?: string; stderr?: string };
      return { code: f.code ?? -1, out: f.stdout ?? '', err: f.stderr ?? '' };
    }
  };
  const sync = (reason: string) =>
    flotilla('sync', target(), '--reason', reason, '--wait', '--timeout', '90');

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
    const shown = await flotilla('diff', target(), '--exit-code');
    expect(shown.code).toBe(1);
    expect(shown.out).toContain(
      `--- live/apps.v1.Deployment.guestbook.guestbook-ui\n+++ desired/apps.v1.Deployment.guestbook.guestbook-ui\n@@ -0,0 +1,`,
    );
    expect(shown.out).toMatch(/^\+ +- image: ghcr\.io\/example\/guestbook-ui:1\.0\.0$/m);
    expect(await e2e.images()).toEqual([undefined]);

    const synced = await sync('first release CHG-50');
    expect([synced.code, synced.err.includes('flotilla sync:')]).toEqual([0, false]);
    await expect
      .poll(async () => (await flotilla('diff', target(), '--exit-code')).code, { timeout: 30_000 })
      .toBe(0);
    const clean = await flotilla('diff', target(), '--exit-code');
    expect(clean.out).toBe('');
    expect((await status())?.syncStatus).toBe('Synced');
  }, 180_000);

  it('a commit changes the image: OutOfSync, the diff names the image line, nothing applied until synced', async () => {
    const next = await e2e.commitImageTag('1.1.0');
    await expect.poll(async () => (await status())?.desiredRevision, { timeout: 60_000 }).toBe(next);
    await expect
      .poll(async () => (await flotilla('diff', target(), '--exit-code')).code, { timeout: 30_000 })
      .toBe(1);
    expect((await status())?.syncStatus).toBe('OutOfSync');
    const shown = await flotilla('diff', target(), '--exit-code');
    expect(shown.out).toMatch(
      /^-( +)- image: ghcr\.io\/example\/guestbook-ui:1\.0\.0\n\+\1- image: ghcr\.io\/example\/guestbook-ui:1\.1\.0$/m,
    );
    // Only the Deployment changes, and only its image.
    expect(shown.out.match(/^diff -u -N /gm)).toHaveLength(1);
    expect(shown.err).toMatch(/1 of 4 object\(s\) differ/);
    const json = JSON.parse((await flotilla('diff', target(), '-o', 'json')).out) as TargetDiffView;
    expect(json.comparison).toMatchObject({ revision: next, current: true, inSync: false, compared: 4 });
    expect(json.comparison?.objects.map((o) => [o.kind, o.name, o.action, o.paths])).toEqual([
      ['Deployment', 'guestbook-ui', 'change', ['/spec/template/spec/containers/0/image']],
    ]);
    // Shown, not applied.
    expect(await e2e.images()).toEqual(['ghcr.io/example/guestbook-ui:1.0.0']);

    const synced = await sync('release review CHG-51');
    expect([synced.code, synced.err.includes('flotilla sync:')]).toEqual([0, false]);
    expect(await e2e.images()).toEqual(['ghcr.io/example/guestbook-ui:1.1.0']);
    await expect
      .poll(async () => (await flotilla('diff', target(), '--exit-code')).code, { timeout: 30_000 })
      .toBe(0);
    expect((await status())?.syncStatus).toBe('Synced');
  }, 180_000);
});
