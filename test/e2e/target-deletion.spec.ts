import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { CoreV1Api, KubeConfig } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GuestbookFleet } from '../support/guestbook-fleet.js';

const poll = { timeout: 120_000, interval: 500 };

/**
 * A target deleted with its objects, all real processes (hub on PostgreSQL and Redis, an agent per
 * kube-sim cluster, git daemon): an appset with Argo CD's resources finalizer drops a cluster, and
 * that cluster's agent deletes the guestbook there — but the Namespace marked Delete=false stays.
 */
describe('deleting a target with its objects', () => {
  let e2e: GuestbookFleet;
  const appSet = (clusters: string[]) => ({
    apiVersion: 'flotilla.dev/v1alpha1',
    kind: 'ApplicationSet',
    metadata: { name: 'guestbook' },
    spec: {
      generators: [{ list: { elements: clusters.map((cluster) => ({ cluster })) } }],
      template: {
        metadata: { name: '{{cluster}}-guestbook', finalizers: ['resources-finalizer.argocd.argoproj.io'] },
        spec: {
          source: { repoURL: e2e.repoUrl, targetRevision: 'main', path: 'apps/guestbook' },
          destination: { name: '{{cluster}}', namespace: 'guestbook' },
          syncPolicy: { automated: { prune: true, selfHeal: true } },
        },
      },
    },
  });
  const core = (index: number) => {
    const kc = new KubeConfig();
    kc.loadFromFile(e2e.fleet.clusters[index]!.kubeconfigPath);
    return kc.makeApiClient(CoreV1Api);
  };
  const exists = (read: Promise<unknown>) => read.then(() => true).catch(() => false);

  beforeAll(async () => {
    e2e = await GuestbookFleet.start({ name: 'deletion', clusters: 2, pollSeconds: 1 });
    // The namespace outlives the app on every cluster.
    writeFileSync(
      join(e2e.repoDir, 'apps/guestbook/namespace.yaml'),
      [
        'apiVersion: v1',
        'kind: Namespace',
        'metadata:',
        '  name: guestbook',
        '  annotations:',
        '    argocd.argoproj.io/sync-options: Delete=false',
        '',
      ].join('\n'),
    );
    await e2e.repo.add('.').commit('keep the guestbook namespace');
  }, 120_000);
  afterAll(async () => {
    await e2e?.stop();
  });

  it('a cluster dropped from an appset with the resources finalizer loses the guestbook, keeps the Namespace with Delete=false', async () => {
    const names = e2e.fleet.clusters.map((c) => c.name);
    expect((await e2e.fleet.api.send('POST', '/api/v1/appsets', appSet(names))).status).toBe(201);
    await expect
      .poll(async () => (await e2e.images()).map((i) => i !== undefined), poll)
      .toEqual([true, true]);

    expect((await e2e.fleet.api.send('POST', '/api/v1/appsets', appSet([names[0]!]))).status).toBe(200);
    await expect
      .poll(async () => (await e2e.images()).map((i) => i !== undefined), poll)
      .toEqual([true, false]);
    await expect
      .poll(async () => (await e2e.fleet.api.targets()).map((t) => t.name), poll)
      .toEqual([`${names[0]}-guestbook`]);

    expect(await exists(core(1).readNamespace({ name: 'guestbook' }))).toBe(true);
    expect(
      await exists(core(1).readNamespacedService({ name: 'guestbook-ui', namespace: 'guestbook' })),
    ).toBe(false);
    expect(
      await exists(core(0).readNamespacedService({ name: 'guestbook-ui', namespace: 'guestbook' })),
    ).toBe(true);
    const audit = await e2e.fleet.api.request<{
      items: { actor: string; scope: string; details: Record<string, unknown> }[];
    }>('GET', '/api/v1/audit?action=target.deleted');
    expect(audit.items.map((e) => [e.actor, e.scope])).toEqual([
      [`agent:${names[1]}`, `target:${names[1]}-guestbook`],
    ]);
    expect(audit.items[0]?.details['kept']).toEqual(['Namespace/guestbook']);
  }, 300_000);
});
