import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GuestbookFleet } from '../support/guestbook-fleet.js';

interface RolloutView {
  revision: string;
  status: string;
  step: string | null;
  message: string;
  targets: { name: string; cluster: string; releasedRevision: string | null; pinnedAt: string | null }[];
}
interface SyncRunView {
  cluster: string;
  revision: string;
  trigger: string;
  outcome: string;
}

/**
 * A fleet rollout with a canary step, all real processes (hub on PostgreSQL and Redis, three
 * simulated clusters with one agent each, git daemon). A commit whose image never becomes ready
 * (`-unready` in kube-sim) reaches the canary only; the canary's agent rolls it back on its own
 * after the step's progress deadline, the hub halts the rollout, marks the revision failed, pins the
 * canary, and the other clusters never get the bad revision.
 */
describe('fleet rollout: a bad image on the canary', () => {
  let e2e: GuestbookFleet;

  beforeAll(async () => {
    e2e = await GuestbookFleet.start({
      name: 'canary',
      clusters: 3,
      pollSeconds: 1,
      hubEnv: { ROLLOUT_TICK_SECONDS: '1' },
      labels: (i) => ({ ring: i === 0 ? 'canary' : 'main' }),
    });
  }, 120_000);
  afterAll(async () => {
    await e2e?.stop();
  });

  it('halts the rollout, rolls the canary back on its own, and never reaches the rest', async () => {
    const { fleet } = e2e;
    const api = fleet.api;
    const [canary, ...rest] = fleet.clusters.map((c) => c.name);
    await api.createAppSet({
      apiVersion: 'flotilla.dev/v1alpha1',
      kind: 'ApplicationSet',
      metadata: { name: 'guestbook' },
      spec: {
        generators: [{ list: { elements: fleet.clusters.map((c) => ({ cluster: c.name })) } }],
        template: {
          metadata: { name: '{{cluster}}-guestbook' },
          spec: {
            source: { repoURL: e2e.repoUrl, targetRevision: 'main', path: 'apps/guestbook' },
            destination: { name: '{{cluster}}', namespace: 'guestbook' },
            syncPolicy: { automated: { prune: true, selfHeal: true } },
          },
        },
        rollout: {
          steps: [
            {
              name: 'canary',
              selector: { matchLabels: { ring: 'canary' } },
              maxUnavailable: 1,
              bakeTime: '2s',
              progressDeadline: '15s',
            },
            {
              name: 'main',
              selector: { matchLabels: { ring: 'main' } },
              maxUnavailable: '50%',
              progressDeadline: '60s',
            },
          ],
        },
      },
    });
    const rollout = () => api.request<RolloutView>('GET', '/api/v1/rollouts/guestbook');

    // The first revision goes through the rollout too: canary, bake, then the rest, one at a time.
    const good = await e2e.head();
    await expect
      .poll(async () => (await rollout()).status, { timeout: 90_000, interval: 500 })
      .toBe('Completed');
    await expect
      .poll(() => e2e.targetStates(), { timeout: 30_000, interval: 500 })
      .toEqual(e2e.allSyncedAt(good));

    const bad = await e2e.commitImageTag('1.1.0-unready');
    // The canary gets the bad image; while it waits, the rollout says why.
    await expect
      .poll(async () => (await e2e.images())[0], { timeout: 60_000, interval: 500 })
      .toBe('ghcr.io/example/guestbook-ui:1.1.0-unready');
    const waiting = await rollout();
    expect(waiting.revision).toBe(bad);
    expect(waiting.step).toBe('canary');
    expect(waiting.message).toMatch(/step canary: 0\/1 cluster\(s\) synced and Healthy; waiting for/);

    // Past the 15 s deadline the canary's agent restores the healthy bundle by itself.
    await expect
      .poll(async () => (await e2e.images())[0], { timeout: 60_000, interval: 500 })
      .toBe('ghcr.io/example/guestbook-ui:1.0.0');
    await expect
      .poll(async () => (await rollout()).status, { timeout: 30_000, interval: 500 })
      .toBe('Halted');
    const halted = await rollout();
    // The hub halts on the same deadline by itself; whichever notices first, the canary is named.
    expect(halted.message).toContain(canary);
    await expect
      .poll(async () => (await rollout()).targets.find((t) => t.cluster === canary)?.pinnedAt, {
        timeout: 15_000,
        interval: 500,
      })
      .toBe(good);

    const history = await api.request<{ items: SyncRunView[] }>(
      'GET',
      `/api/v1/sync-runs?appSet=guestbook&trigger=rollback`,
    );
    expect(history.items).toEqual([
      expect.objectContaining({ cluster: canary, revision: good, trigger: 'rollback', outcome: 'Succeeded' }),
    ]);
    const audit = await api.request<{ items: { action: string }[] }>(
      'GET',
      '/api/v1/audit?action=revision.failed',
    );
    expect(audit.items).toHaveLength(1);

    // The rest of the fleet never received the bad revision: not released, not synced, not running.
    const bad_runs = await api.request<{ items: SyncRunView[] }>(
      'GET',
      `/api/v1/sync-runs?appSet=guestbook&limit=500`,
    );
    expect(bad_runs.items.filter((r) => r.revision === bad).map((r) => r.cluster)).toEqual([canary]);
    for (const t of halted.targets.filter((x) => x.cluster !== canary)) expect(t.releasedRevision).toBe(good);
    expect((await e2e.images()).slice(1)).toEqual(rest.map(() => 'ghcr.io/example/guestbook-ui:1.0.0'));
    // And the canary stays on the good revision: the hub serves its pin, the agent stays put.
    await expect
      .poll(async () => (await api.targets()).find((t) => t.cluster === canary)?.lastSyncedRevision, {
        timeout: 10_000,
        interval: 500,
      })
      .toBe(good);
  }, 240_000);
});
