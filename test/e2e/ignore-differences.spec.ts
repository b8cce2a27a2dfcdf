import { AppsV1Api, KubeConfig } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GuestbookFleet } from '../support/guestbook-fleet.js';

/**
 * Ignore rules end to end — a real hub (PostgreSQL, Redis), a Git repository behind git daemon, a
 * simulated cluster with the real agent and the real kubectl: the ApplicationSet ignores
 * Deployment `/spec/replicas` (Argo CD's `ignoreDifferences`) with `RespectIgnoreDifferences=true`.
 * An out-of-band `kubectl scale` is neither reported nor healed; a changed image is healed, and
 * that heal keeps the hand-set replica count.
 */

interface AuditItem {
  action: string;
  details: { paths?: string[] };
}

describe('ignoreDifferences end to end', () => {
  let e2e: GuestbookFleet;

  beforeAll(async () => {
    e2e = await GuestbookFleet.start({ name: 'ign', clusters: 1, pollSeconds: 1 });
  }, 120_000);
  afterAll(async () => {
    await e2e?.stop();
  });

  const cluster = () => e2e.fleet.clusters[0]!;
  const target = () => `${cluster().name}-guestbook`;
  const desiredImage = 'ghcr.io/example/guestbook-ui:1.0.0';

  const kubectl = (...args: string[]) => e2e.kubectl(0, ...args);

  async function deployment() {
    const kc = new KubeConfig();
    kc.loadFromFile(cluster().kubeconfigPath);
    const d = await kc
      .makeApiClient(AppsV1Api)
      .readNamespacedDeployment({ name: 'guestbook-ui', namespace: 'guestbook' });
    return { replicas: d.spec?.replicas, image: d.spec?.template.spec?.containers[0]?.image };
  }

  /** What the hub heard about drift on the target (the agent's drift reports, audited), oldest first. */
  async function driftEvents(): Promise<{ action: string; paths: string[] }[]> {
    const r = await e2e.fleet.api.request<{ items: AuditItem[] }>(
      'GET',
      `/api/v1/audit?scope=${encodeURIComponent(`target:${target()}`)}&action=drift.`,
    );
    return r.items.map((e) => ({ action: e.action, paths: e.details.paths ?? [] })).reverse();
  }

  it('leaves an out-of-band scale alone and heals an image change, keeping the scale', async () => {
    await e2e.fleet.api.createAppSet({
      apiVersion: 'flotilla.dev/v1alpha1',
      kind: 'ApplicationSet',
      metadata: { name: 'guestbook' },
      spec: {
        generators: [{ list: { elements: [{ cluster: cluster().name }] } }],
        template: {
          metadata: { name: '{{cluster}}-guestbook' },
          spec: {
            source: { repoURL: e2e.repoUrl, targetRevision: 'main', path: 'apps/guestbook' },
            destination: { name: '{{cluster}}', namespace: 'guestbook' },
            syncPolicy: {
              automated: { prune: true, selfHeal: true },
              syncOptions: ['RespectIgnoreDifferences=true'],
            },
            ignoreDifferences: [{ group: 'apps', kind: 'Deployment', jsonPointers: ['/spec/replicas'] }],
          },
        },
      },
    });
    const head = await e2e.head();
    await expect
      .poll(() => e2e.targetStates(), { timeout: 60_000, interval: 500 })
      .toEqual(e2e.allSyncedAt(head));
    expect(await deployment()).toEqual({ replicas: 2, image: desiredImage });

    const scaled = await kubectl('scale', 'deployment/guestbook-ui', '--replicas=5');
    expect(scaled.stderr).toBe('');
    // The agent sees the watch event within a second and heals within its 2 s backoff; give it
    // well over both. Nothing may come of it.
    await new Promise((resolve) => setTimeout(resolve, 5_000));
    expect(await deployment()).toEqual({ replicas: 5, image: desiredImage });
    expect(await driftEvents()).toEqual([]);

    const changed = await kubectl(
      'set',
      'image',
      'deployment/guestbook-ui',
      'guestbook-ui=ghcr.io/example/guestbook-ui:hotfix',
    );
    expect(changed.stderr).toBe('');
    await expect
      .poll(async () => (await deployment()).image, { timeout: 30_000, interval: 250 })
      .toBe(desiredImage);
    // The heal re-applied the Deployment with the live replica count (RespectIgnoreDifferences).
    expect((await deployment()).replicas).toBe(5);
    await expect
      .poll(async () => (await driftEvents()).map((e) => e.action), { timeout: 30_000, interval: 500 })
      .toEqual(['drift.detected', 'drift.healed']);
    for (const e of await driftEvents()) {
      expect(e.paths).toContain('/spec/template/spec/containers/0/image');
      expect(e.paths).not.toContain('/spec/replicas');
    }
    expect(await e2e.targetStates()).toEqual(e2e.allSyncedAt(head));
  }, 180_000);
});
