import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type KubeObject } from '@flotilla/contract';
import { AgentHarness, loadFixture, pollOptions as poll } from './testing/agent-harness.js';

const v1: KubeObject[] = loadFixture('bundle-web.yaml');
/** Git's next commit: a new image, and one object more. */
const v2: KubeObject[] = [
  ...v1.map((m) =>
    m.kind === 'Deployment'
      ? {
          ...m,
          spec: {
            ...(m['spec'] as object),
            template: {
              metadata: { labels: { app: 'web' } },
              spec: { containers: [{ name: 'web', image: 'nginx:1.28', ports: [{ containerPort: 80 }] }] },
            },
          },
        }
      : m,
  ),
  { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'web-extra' }, data: { mode: 'blue' } },
];

describe('agent: the comparison — what a sync would change, told to the hub (#17 live diff)', () => {
  let h: AgentHarness;
  beforeAll(async () => {
    h = await AgentHarness.start('compare');
  });
  afterAll(async () => {
    await h.stop();
  });

  const comparisons = () => h.hub.reportsOf('comparison');
  let v2Digest = '';

  it('after a sync: in sync, every declared object compared', async () => {
    h.hub.setAssignments([h.assignment({ bundleDigest: h.hub.addBundle(v1) })]);
    await h.runAgent();
    await expect.poll(() => h.syncs().at(-1)?.outcome, poll).toBe('Succeeded');
    await expect.poll(() => comparisons().at(-1)?.inSync, poll).toBe(true);
    expect(comparisons().at(-1)).toMatchObject({ revision: 'rev-1', compared: 3, objects: [] });
  });

  it('automated sync off: nothing is applied, and the comparison says what a sync would do', async () => {
    const digest = h.hub.addBundle(v2);
    v2Digest = digest;
    h.hub.setAssignments([
      h.assignment({
        bundleDigest: digest,
        revision: 'rev-2',
        syncPolicy: { automated: false, selfHeal: false, prune: true },
      }),
    ]);
    await expect.poll(() => comparisons().at(-1)?.revision, poll).toBe('rev-2');
    const report = comparisons().at(-1);
    expect(report).toMatchObject({ bundleDigest: digest, inSync: false, compared: 4, truncated: false });
    expect(report?.objects.map((o) => [o.kind, o.name, o.action, o.paths])).toEqual([
      ['ConfigMap', 'web-extra', 'create', ['']],
      ['Deployment', 'web', 'change', ['/spec/template/spec/containers/0/image']],
    ]);
    const deployment = report?.objects[1]?.diff ?? '';
    expect(deployment).toContain(
      '--- live/apps.v1.Deployment.shop.web\n+++ desired/apps.v1.Deployment.shop.web\n',
    );
    expect(deployment).toContain('\n-        - image: nginx:1.27\n+        - image: nginx:1.28\n');
    expect(report?.objects[0]?.diff).toContain('\n+data:\n+  mode: blue\n');
    // Shown, not applied.
    const live = (await h.read('Deployment', 'web')) as unknown as {
      spec: { template: { spec: { containers: { image: string }[] } } };
    };
    expect(live.spec.template.spec.containers[0]?.image).toBe('nginx:1.27');
    expect(await h.read('ConfigMap', 'web-extra')).toBeUndefined();
    expect(h.syncs()).toHaveLength(1);
  });

  it('an out-of-band change shows in the next comparison; one that is undone shows as before', async () => {
    const before = comparisons().length;
    await h.edit('Deployment', 'web', { spec: { replicas: 5 } });
    await expect
      .poll(
        () =>
          comparisons()
            .at(-1)
            ?.objects.find((o) => o.kind === 'Deployment')?.paths,
        poll,
      )
      .toEqual(['/spec/replicas', '/spec/template/spec/containers/0/image']);
    expect(comparisons().at(-1)?.objects[1]?.diff).toContain('\n-  replicas: 5\n+  replicas: 2\n');
    await h.edit('Deployment', 'web', { spec: { replicas: 2 } });
    await expect
      .poll(
        () =>
          comparisons()
            .at(-1)
            ?.objects.find((o) => o.kind === 'Deployment')?.paths,
        poll,
      )
      .toEqual(['/spec/template/spec/containers/0/image']);
    // Sent only when what it says changed: no two in a row say the same.
    const sent = comparisons()
      .slice(before - 1)
      .map(({ objects, inSync, revision }) => JSON.stringify({ objects, inSync, revision }));
    expect(sent.every((s, i) => i === 0 || s !== sent[i - 1])).toBe(true);
    expect(sent.length).toBe(3);
  });

  it('a new commit that renders the same bundle is compared as of its revision', async () => {
    h.hub.setAssignments([
      h.assignment({
        bundleDigest: v2Digest,
        revision: 'rev-3',
        syncPolicy: { automated: false, selfHeal: false, prune: true },
      }),
    ]);
    await expect.poll(() => comparisons().at(-1)?.revision, poll).toBe('rev-3');
    expect(comparisons().at(-1)).toMatchObject({ bundleDigest: v2Digest, inSync: false });
  });

  it('an object Git no longer declares is shown as a deletion, marked whether a sync would prune it', async () => {
    // The cluster runs rev-1's three objects; Git drops the ConfigMap.
    const v3 = h.hub.addBundle(v1.filter((m) => m.kind !== 'ConfigMap'));
    const manual = (prune: boolean, revision: string) =>
      h.assignment({ bundleDigest: v3, revision, syncPolicy: { automated: false, selfHeal: false, prune } });
    h.hub.setAssignments([manual(false, 'rev-4')]);
    await expect.poll(() => comparisons().at(-1)?.revision, poll).toBe('rev-4');
    const kept = comparisons().at(-1);
    // What Git declares matches: in sync; the leftover is listed beside it, not pruned (prune off).
    expect(kept).toMatchObject({ inSync: true, compared: 2 });
    expect(kept?.objects.map((o) => [o.kind, o.namespace, o.name, o.action, o.prune])).toEqual([
      ['ConfigMap', 'shop', 'web-config', 'delete', false],
    ]);
    expect(kept?.objects[0]?.diff).toContain(
      '--- live/v1.ConfigMap.shop.web-config\n+++ desired/v1.ConfigMap.shop.web-config\n',
    );
    expect(kept?.objects[0]?.diff).toContain('\n-data:\n-  greeting: hello\n');

    h.hub.setAssignments([manual(true, 'rev-5')]);
    await expect.poll(() => comparisons().at(-1)?.revision, poll).toBe('rev-5');
    expect(
      comparisons()
        .at(-1)
        ?.objects.map((o) => [o.name, o.action, o.prune]),
    ).toEqual([['web-config', 'delete', true]]);
    expect(await h.read('ConfigMap', 'web-config')).toBeDefined();

    // A sync that prunes it: gone, and no longer listed.
    h.hub.setAssignments([
      h.assignment({ bundleDigest: v3, revision: 'rev-6', syncPolicy: { automated: true, prune: true } }),
    ]);
    await expect.poll(() => h.read('ConfigMap', 'web-config'), poll).toBeUndefined();
    await expect.poll(() => comparisons().at(-1)?.objects, poll).toEqual([]);
    expect(comparisons().at(-1)).toMatchObject({ revision: 'rev-6', inSync: true });
  });
});
