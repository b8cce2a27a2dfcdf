import { KubeConfig } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type Assignment,
  type KubeObject,
  type ProjectRestrictions,
  assignmentSchema,
} from '@flotilla/contract';
import { type SimClusterHandle, startSimCluster } from '@flotilla/kube-sim';
import { type HealthAssessor } from '../health/target-health.js';
import { type KubeClient, createKubeClient } from '../kube/kube-client.js';
import { defaultHealthAssessor } from '../lib-adapters.js';
import { loadFixture } from '../testing/agent-harness.js';
import { syncTarget } from './sync-target.js';

// The agent's project check on a simulated cluster (real client-node, real discovery): a bundle with
// any object outside the target's project is refused whole, naming each object, and nothing is applied.

const manifests = loadFixture('bundle-web.yaml');
const widgetCrd: KubeObject = {
  apiVersion: 'apiextensions.k8s.io/v1',
  kind: 'CustomResourceDefinition',
  metadata: { name: 'widgets.example.com' },
  spec: {
    group: 'example.com',
    scope: 'Cluster',
    names: { kind: 'Widget', plural: 'widgets', singular: 'widget', listKind: 'WidgetList' },
    versions: [{ name: 'v1', served: true, storage: true, schema: { openAPIV3Schema: { type: 'object' } } }],
  },
};
const widget: KubeObject = { apiVersion: 'example.com/v1', kind: 'Widget', metadata: { name: 'w' } };

const shopOnly: ProjectRestrictions = {
  name: 'team-shop',
  namespaces: ['shop'],
  clusterResourceWhitelist: [{ group: '', kind: 'Namespace' }],
  clusterResourceBlacklist: [],
  namespaceResourceBlacklist: [],
};

function assignment(project: ProjectRestrictions | undefined, name: string): Assignment {
  return assignmentSchema.parse({
    targetId: `t-${name}`,
    name,
    appSet: 'web',
    namespace: 'shop',
    revision: 'r1',
    bundleDigest: `sha256:${'0'.repeat(64)}`,
    syncPolicy: {},
    ...(project && { project }),
  });
}

describe('the project check before apply', () => {
  let sim: SimClusterHandle;
  let kube: KubeClient;
  let health: HealthAssessor;
  beforeAll(async () => {
    health = await defaultHealthAssessor();
    sim = await startSimCluster({ name: 'project-check' });
    const kc = new KubeConfig();
    kc.loadFromString(sim.kubeconfig());
    kube = createKubeClient(kc);
  });
  afterAll(async () => {
    await sim.stop();
  });

  it.each<[string, ProjectRestrictions, KubeObject[], string[]]>([
    [
      'a namespace outside the destinations',
      { ...shopOnly, namespaces: ['team-*'] },
      manifests,
      [
        "Deployment/web: apps/Deployment 'web': namespace 'shop' is not among the destinations of project 'team-shop' on this cluster",
        "ConfigMap/web-config: ConfigMap 'web-config': namespace 'shop' is not among the destinations of project 'team-shop' on this cluster",
      ],
    ],
    [
      'a cluster-scoped kind not whitelisted',
      { ...shopOnly, clusterResourceWhitelist: [] },
      manifests,
      [
        "Namespace/shop: Namespace 'shop': cluster-scoped kind Namespace is not permitted by project 'team-shop' (clusterResourceWhitelist)",
      ],
    ],
    [
      "a cluster-scoped custom kind known only from the bundle's CRD",
      {
        ...shopOnly,
        clusterResourceWhitelist: [
          { group: '', kind: 'Namespace' },
          { group: 'apiextensions.k8s.io', kind: 'CustomResourceDefinition' },
        ],
      },
      [...manifests, widgetCrd, widget],
      [
        "Widget/w: example.com/Widget 'w': cluster-scoped kind Widget is not permitted by project 'team-shop' (clusterResourceWhitelist)",
      ],
    ],
  ])('refuses %s: Failed, each object named, nothing applied', async (_what, project, bundle, refused) => {
    const r = await syncTarget({
      kube,
      health,
      manifests: bundle,
      inventory: [],
      trigger: 'auto',
      pollMs: 50,
      assignment: assignment(project, 'refused'),
    });
    expect(r.report.outcome).toBe('Failed');
    expect(r.report.message).toBe(`${refused.length} object(s) outside project 'team-shop'; nothing applied`);
    expect(r.report.resources.map((x) => `${x.kind}/${x.name}: ${x.message}`)).toEqual(refused);
    expect(r.report.resources.every((x) => x.action === 'failed')).toBe(true);
    expect(await kube.get({ apiVersion: 'v1', kind: 'Namespace', name: 'shop' })).toBeUndefined();
  });

  it('applies a bundle inside the project, and one without a project (unrestricted)', async () => {
    for (const [project, name] of [
      [shopOnly, 'inside'],
      [undefined, 'unrestricted'],
    ] as const) {
      const r = await syncTarget({
        kube,
        health,
        manifests,
        inventory: [],
        trigger: 'auto',
        pollMs: 50,
        assignment: assignment(project, name),
      });
      expect(r.report.outcome).toBe('Succeeded');
    }
    expect(
      await kube.get({ apiVersion: 'v1', kind: 'ConfigMap', namespace: 'shop', name: 'web-config' }),
    ).toBeDefined();
  });
});
