import { AppsV1Api, KubeConfig } from '@kubernetes/client-node';
import type { BreakGlassRecordView, BreakGlassView, TargetWindowsView } from '@flotilla/contract';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GuestbookFleet } from '../support/guestbook-fleet.js';

/**
 * Change control end to end — a real hub (PostgreSQL, Redis), a Git repository behind git daemon,
 * a simulated cluster with the real agent, the real kubectl and the built CLI:
 * a deny window holds a new commit (the cluster stays on the old image, history shows Blocked,
 * the target shows it pending) until the window is deleted, then it lands; a break-glass that
 * pauses self-heal lets a hand-made `kubectl scale` stand and records it; closing it, or its expiry, brings
 * enforcement back and the agent heals the change.
 */

describe('sync windows and break-glass end to end', () => {
  let e2e: GuestbookFleet;

  beforeAll(async () => {
    e2e = await GuestbookFleet.start({ name: 'cc', clusters: 1, pollSeconds: 1 });
  }, 120_000);
  afterAll(async () => {
    await e2e?.stop();
  });

  const cluster = () => e2e.fleet.clusters[0]!;
  const target = () => `${cluster().name}-guestbook`;

  /** The built CLI against the fleet's hub, `-o json` parsed. */
  async function flotilla<T>(...args: string[]): Promise<T> {
    const r = await e2e.flotilla(...args, '-o', 'json');
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    return JSON.parse(r.stdout) as T;
  }

  const kubectl = (...args: string[]) => e2e.kubectl(0, ...args);

  async function replicas(): Promise<number | undefined> {
    const kc = new KubeConfig();
    kc.loadFromFile(cluster().kubeconfigPath);
    const d = await kc
      .makeApiClient(AppsV1Api)
      .readNamespacedDeployment({ name: 'guestbook-ui', namespace: 'guestbook' });
    return d.spec?.replicas;
  }

  const image = async () => (await e2e.images())[0];

  /**
   * Whether the agent recorded the manual change under the override or healed it (`healed` tells),
   * within 15 s.
   */
  async function settle(id: number, healed: () => Promise<boolean>): Promise<'recorded' | 'healed'> {
    for (let i = 0; i < 60; i++) {
      const record = await flotilla<BreakGlassRecordView>('break-glass', 'record', String(id));
      if (record.changes.length > 0) return 'recorded';
      if (await healed()) return 'healed';
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
    throw new Error('the agent neither recorded nor healed the manual scale within 15 s');
  }

  it('a deny window holds a new commit, which lands when the window is deleted', async () => {
    const { fleet } = e2e;
    await e2e.createAppSet();
    const first = await e2e.head();
    await expect
      .poll(() => e2e.targetStates(), { timeout: 60_000, interval: 500 })
      .toEqual(e2e.allSyncedAt(first));

    // Always active (fires every minute, lasts an hour): nothing automatic reaches this cluster.
    await fleet.api.request('POST', '/api/v1/windows', {
      name: 'freeze',
      kind: 'deny',
      schedule: '* * * * *',
      duration: '1h',
      clusters: [cluster().name],
      reason: 'change freeze for the e2e',
    });
    // Any assignment that brings the new revision also brings the window: it was stored first.
    const second = await e2e.commitImageTag('1.2.0');
    await expect
      .poll(
        async () =>
          (await fleet.api.syncRuns({ target: target() })).items
            .filter((r) => r.revision === second)
            .map((r) => r.outcome),
        { timeout: 60_000, interval: 500 },
      )
      .toContain('Blocked');
    expect(await image()).toBe('ghcr.io/example/guestbook-ui:1.0.0');
    const held = await flotilla<TargetWindowsView>('windows', 'next', target());
    expect(held).toMatchObject({
      canSync: false,
      windows: [{ name: 'freeze', kind: 'deny', active: true }],
      pending: { revision: second, trigger: 'auto', eligibleAt: null },
    });

    // Deleting the window opens it: the agent is woken with windowless assignments and syncs.
    await fleet.api.request('DELETE', '/api/v1/windows/freeze?reason=freeze%20over');
    await expect.poll(image, { timeout: 60_000, interval: 500 }).toBe('ghcr.io/example/guestbook-ui:1.2.0');
    await expect
      .poll(() => e2e.targetStates(), { timeout: 30_000, interval: 500 })
      .toEqual(e2e.allSyncedAt(second));
    const runs = (await fleet.api.syncRuns({ target: target() })).items.filter((r) => r.revision === second);
    // Newest first: the sync that landed after the blocked attempt.
    expect(runs.map((r) => r.outcome)).toEqual(['Succeeded', 'Blocked']);
    expect((await flotilla<TargetWindowsView>('windows', 'next', target())).pending).toBeNull();
  }, 180_000);

  it('break-glass lets a manual scale stand and records it; after close the agent heals it', async () => {
    expect(await replicas()).toBe(2);
    const opened = await flotilla<BreakGlassView>(
      'break-glass',
      'open',
      'cluster',
      cluster().name,
      '--reason',
      'INC-42: scale out by hand',
      '--for',
      '30',
      '--pause-self-heal',
    );
    expect(opened).toMatchObject({ state: 'active', pauseSelfHeal: true, allowSyncOutsideWindows: false });

    // The override reaches the agent through its woken long-poll. Should the scale beat it there,
    // the agent heals it (replicas back to 2, nothing recorded) and the scale is made again.
    let manual = 0;
    for (let attempt = 1; attempt <= 3; attempt++) {
      manual = 3 + attempt;
      const scaled = await kubectl('scale', 'deployment/guestbook-ui', `--replicas=${manual}`);
      expect(scaled.stderr).toBe('');
      if ((await settle(opened.id, async () => (await replicas()) === 2)) === 'recorded') break;
    }
    const record = await flotilla<BreakGlassRecordView>('break-glass', 'record', String(opened.id));
    expect(record.changes[0]).toMatchObject({
      summary: `manual change under break-glass #${opened.id}`,
      target: target(),
      cluster: cluster().name,
      resource: { group: 'apps', kind: 'Deployment', namespace: 'guestbook', name: 'guestbook-ui' },
      state: 'tolerated',
    });
    expect(record.changes[0]?.paths).toContain('/spec/replicas');
    // The change stands while the override is open (the agent reported it tolerated, not healed).
    await new Promise((resolve) => setTimeout(resolve, 3_000));
    expect(await replicas()).toBe(manual);

    const closed = await flotilla<BreakGlassView>(
      'break-glass',
      'close',
      String(opened.id),
      '--reason',
      'resolved',
    );
    expect(closed).toMatchObject({ state: 'closed', closeReason: 'resolved' });
    // Enforcement is back: the agent gets assignments without the override and heals the drift.
    await expect.poll(replicas, { timeout: 60_000, interval: 500 }).toBe(2);
    const audit = await e2e.fleet.api.request<{ items: { action: string }[] }>(
      'GET',
      `/api/v1/audit?scope=cluster:${cluster().name}&action=break-glass.`,
    );
    expect(audit.items.map((e) => e.action)).toEqual(['break-glass.closed', 'break-glass.opened']);
  }, 180_000);

  it('at expiry enforcement returns on its own: the agent heals what the override let stand', async () => {
    const desiredImage = 'ghcr.io/example/guestbook-ui:1.2.0';
    expect(await image()).toBe(desiredImage);
    const until = new Date(Date.now() + 15_000).toISOString();
    const opened = await flotilla<BreakGlassView>(
      'break-glass',
      'open',
      'target',
      target(),
      '--reason',
      'INC-43: hold replicas while we look',
      '--until',
      until,
      '--pause-self-heal',
    );
    let recorded = false;
    for (let attempt = 1; attempt <= 3 && !recorded; attempt++) {
      // Another field than the scale above: the agent's fight detector gives up on an object after
      // three identical heal rounds, and this is a different change, not a tug of war.
      await kubectl(
        'set',
        'image',
        'deployment/guestbook-ui',
        `guestbook-ui=ghcr.io/example/guestbook-ui:hotfix-${attempt}`,
      );
      recorded = (await settle(opened.id, async () => (await image()) === desiredImage)) === 'recorded';
    }
    expect(recorded).toBe(true);
    // Nobody closes it: after `until` the agent drops the override and heals; the hub records the expiry.
    await expect.poll(image, { timeout: 60_000, interval: 500 }).toBe(desiredImage);
    expect(Date.now()).toBeGreaterThanOrEqual(Date.parse(until));
    await expect
      .poll(
        async () =>
          (await flotilla<BreakGlassView[]>('break-glass', 'list')).find((b) => b.id === opened.id)?.state,
        {
          timeout: 30_000,
          interval: 500,
        },
      )
      .toBe('expired');
    // The sweep (every 5 s) writes the close into the audit log.
    await expect
      .poll(
        async () =>
          (
            await e2e.fleet.api.request<{ items: { action: string; actor: string }[] }>(
              'GET',
              `/api/v1/audit?scope=target:${target()}&action=break-glass.`,
            )
          ).items.map((e) => [e.action, e.actor]),
        { timeout: 30_000, interval: 500 },
      )
      .toEqual([
        ['break-glass.expired', 'system:break-glass-expiry'],
        ['break-glass.opened', 'user:admin'],
      ]);
  }, 180_000);
});
