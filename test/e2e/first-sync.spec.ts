import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GuestbookFleet } from '../support/guestbook-fleet.js';

/**
 * The first end-to-end path through Flotilla, all real processes: a hub on real PostgreSQL and
 * Redis, two simulated clusters with one agent each, and a Git repository served by `git daemon`.
 * A commit that changes an image tag must reach both clusters, and the hub must say so.
 */
describe('first end-to-end sync', () => {
  let e2e: GuestbookFleet;

  beforeAll(async () => {
    e2e = await GuestbookFleet.start({ name: 'e2e', clusters: 2, pollSeconds: 1 });
  }, 120_000);
  afterAll(async () => {
    await e2e?.stop();
  });

  it('converges both clusters, then rolls a new image tag out to both', async () => {
    const { fleet } = e2e;
    await e2e.createAppSet();
    const first = await e2e.head();
    await expect
      .poll(() => e2e.targetStates(), { timeout: 60_000, interval: 500 })
      .toEqual(e2e.allSyncedAt(first));
    expect(await e2e.images()).toEqual(fleet.clusters.map(() => 'ghcr.io/example/guestbook-ui:1.0.0'));

    const second = await e2e.commitImageTag('1.1.0');
    await expect
      .poll(() => e2e.images(), { timeout: 60_000, interval: 500 })
      .toEqual(fleet.clusters.map(() => 'ghcr.io/example/guestbook-ui:1.1.0'));
    await expect
      .poll(() => e2e.targetStates(), { timeout: 30_000, interval: 500 })
      .toEqual(e2e.allSyncedAt(second));

    for (const target of await fleet.api.targets()) {
      const runs = await fleet.api.request<{ items: { revision: string; outcome: string }[] }>(
        'GET',
        `/api/v1/sync-runs?target=${encodeURIComponent(target.name)}`,
      );
      expect(runs.items.some((r) => r.revision === second && r.outcome === 'Succeeded')).toBe(true);
    }
  }, 180_000);
});
