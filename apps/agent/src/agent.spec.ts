import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TRACKING_ANNOTATION } from '@flotilla/contract';
import { AgentHarness, loadFixture, pollOptions as poll } from './testing/agent-harness.js';

const manifests = loadFixture('bundle-web.yaml');
const withoutConfigMap = manifests.filter((m) => m.kind !== 'ConfigMap');

describe('agent: apply, prune, drift and heal against a simulated cluster', () => {
  let h: AgentHarness;
  beforeAll(async () => {
    h = await AgentHarness.start();
  });
  afterAll(async () => {
    await h.stop();
  });

  it('registers, applies the bundle in order with the tracking annotation, and reports the sync', async () => {
    const digest = h.hub.addBundle(manifests);
    h.hub.setAssignments([h.assignment({ bundleDigest: digest })]);
    await h.runAgent();

    await expect.poll(() => h.syncs().length, poll).toBe(1);
    const sync = h.syncs()[0];
    expect(sync).toMatchObject({
      targetId: 'target-web',
      trigger: 'auto',
      outcome: 'Succeeded',
      bundleDigest: digest,
    });
    expect(sync?.resources.map((r) => [r.kind, r.namespace, r.name, r.action])).toEqual([
      ['Namespace', undefined, 'shop', 'applied'],
      ['ConfigMap', 'shop', 'web-config', 'applied'],
      ['Deployment', 'shop', 'web', 'applied'],
    ]);
    expect(h.hub.registrations).toBe(1);
    expect(h.hub.bundleFetches.get(digest)).toBe(1);

    for (const [kind, name] of [
      ['Deployment', 'web'],
      ['ConfigMap', 'web-config'],
    ] as const) {
      const live = await h.read(kind, name);
      expect(live?.metadata.annotations?.[TRACKING_ANNOTATION]).toBe('web-east');
      const managers = (live?.metadata['managedFields'] as { manager: string; operation: string }[]).map(
        (m) => `${m.manager}:${m.operation}`,
      );
      expect(managers).toContain('flotilla:Apply');
    }
    // The simulated Deployment controller rolls the pods out: Progressing, then Healthy.
    await expect.poll(() => h.hub.reportsOf('health').at(-1)?.status, poll).toBe('Healthy');
    const statuses = h.hub.reportsOf('health').map((r) => r.status);
    expect(statuses).toContain('Progressing');
    expect(
      h.hub
        .reportsOf('health')
        .at(-1)
        ?.resources.map((r) => [r.kind, r.name, r.status]),
    ).toEqual([
      ['Namespace', 'shop', 'Healthy'],
      // No health rule knows ConfigMaps: left out, as in Argo CD.
      ['Deployment', 'web', 'Healthy'],
    ]);
  });

  it('re-applying the same bundle for a new revision changes nothing', async () => {
    const digest = h.hub.addBundle(manifests);
    h.hub.setAssignments([h.assignment({ bundleDigest: digest, revision: 'rev-2' })]);
    await expect.poll(() => h.syncs().length, poll).toBe(2);
    expect(h.syncs()[1]?.revision).toBe('rev-2');
    expect(h.syncs()[1]?.resources.map((r) => r.action)).toEqual(['unchanged', 'unchanged', 'unchanged']);
  });

  it('prunes the ConfigMap once a new bundle no longer declares it', async () => {
    const digest = h.hub.addBundle(withoutConfigMap);
    h.hub.setAssignments([h.assignment({ bundleDigest: digest, revision: 'rev-3' })]);
    await expect.poll(() => h.syncs().length, poll).toBe(3);
    // Pruned inside the Sync phase in its own wave (-1), so before the wave-0 Deployment is applied.
    expect(h.syncs()[2]?.resources.map((r) => [r.kind, r.action])).toEqual([
      ['Namespace', 'unchanged'],
      ['ConfigMap', 'pruned'],
      ['Deployment', 'unchanged'],
    ]);
    // Deleted in the foreground (Argo CD's default): gone once the garbage collector has seen it.
    await expect.poll(() => h.read('ConfigMap', 'web-config'), poll).toBeUndefined();
  });

  it('heals out-of-band changes seen through the watch: replicas, image, a removed label, a deletion', async () => {
    const digest = h.hub.addBundle(manifests);
    h.hub.setAssignments([h.assignment({ bundleDigest: digest, revision: 'rev-4' })]);
    await expect.poll(() => h.syncs().length, poll).toBe(4);

    await h.edit('Deployment', 'web', { spec: { replicas: 7 } });
    await expect.poll(() => h.drifts('healed').length, poll).toBe(1);
    expect(await h.replicas()).toBe(2);
    const detected = h.drifts('detected')[0];
    expect(detected?.resource).toEqual({ group: 'apps', kind: 'Deployment', namespace: 'shop', name: 'web' });
    expect(detected?.paths).toEqual(['/spec/replicas']);
    expect(detected?.manager).toBe('kubectl-edit');
    expect(h.syncs().at(-1)).toMatchObject({ trigger: 'self-heal', outcome: 'Succeeded' });
    expect(
      h
        .syncs()
        .at(-1)
        ?.resources.map((r) => [r.kind, r.action]),
    ).toEqual([['Deployment', 'applied']]);

    await h.edit('Deployment', 'web', {
      spec: {
        template: {
          spec: { containers: [{ name: 'web', image: 'nginx:evil', ports: [{ containerPort: 80 }] }] },
        },
      },
    });
    await expect.poll(() => h.drifts('healed').length, poll).toBe(2);
    const live = (await h.read('Deployment', 'web')) as unknown as {
      spec: { template: { spec: { containers: { image: string }[] } } };
    };
    expect(live.spec.template.spec.containers[0]?.image).toBe('nginx:1.27');

    await h.edit('Deployment', 'web', { metadata: { labels: { tier: null } } });
    await expect.poll(() => h.drifts('healed').length, poll).toBe(3);
    expect(h.drifts('detected')[2]?.paths).toEqual(['/metadata/labels/tier']);
    expect((await h.read('Deployment', 'web'))?.metadata.labels).toEqual({
      app: 'web',
      tier: 'front',
      'flotilla.dev/tracked': 'true',
    });

    // Without its tracking label the object leaves the agent's watch; that is drift too, and healed.
    await h.edit('Deployment', 'web', { metadata: { labels: { 'flotilla.dev/tracked': null } } });
    await expect.poll(() => h.drifts('healed').length, poll).toBe(4);
    expect(h.drifts('detected')[3]?.paths).toEqual(['/metadata/labels/flotilla.dev~1tracked']);
    expect((await h.read('Deployment', 'web'))?.metadata.labels?.['flotilla.dev/tracked']).toBe('true');
    await h.edit('Deployment', 'web', { spec: { replicas: 4 } });
    await expect.poll(() => h.drifts('healed').length, poll).toBe(5);

    await h.remove('ConfigMap', 'web-config');
    await expect.poll(() => h.drifts('healed').length, poll).toBe(6);
    expect(h.drifts('detected')[5]).toMatchObject({
      resource: { kind: 'ConfigMap', name: 'web-config' },
      paths: [''],
    });
    expect((await h.read('ConfigMap', 'web-config')) as unknown).toMatchObject({
      data: { greeting: 'hello' },
    });
  });

  it('with selfHeal off, reports drift and leaves it alone', async () => {
    const digest = h.hub.addBundle(manifests);
    h.hub.setAssignments([
      h.assignment({
        bundleDigest: digest,
        revision: 'rev-4',
        syncPolicy: { automated: true, selfHeal: false },
      }),
    ]);
    const healedBefore = h.drifts('healed').length;
    const detectedBefore = h.drifts('detected').length;
    await h.edit('Deployment', 'web', { spec: { replicas: 4 } });
    await expect.poll(() => h.drifts('detected').length, poll).toBe(detectedBefore + 1);
    // A second, later drift proves the agent has moved on without healing the first one.
    await h.edit('ConfigMap', 'web-config', { data: { greeting: 'hi' } });
    await expect.poll(() => h.drifts('detected').length, poll).toBe(detectedBefore + 2);
    expect(h.drifts('healed').length).toBe(healedBefore);
    expect(await h.replicas()).toBe(4);
  });
});
