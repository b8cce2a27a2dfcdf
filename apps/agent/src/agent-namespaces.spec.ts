import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type KubeObject } from '@flotilla/contract';
import { AgentHarness, pollOptions as poll } from './testing/agent-harness.js';
import {
  type PolicyRule,
  type ResourceAttributes,
  allowedBy,
  requestAttributes,
} from './testing/rbac-request.js';

/**
 * The rules of the flotilla-agent chart with its default values (deploy/charts/flotilla-agent,
 * asserted there): a ClusterRole, or the same rules in a Role per namespace for a namespace-scoped agent.
 */
const AGENT_VERBS = ['create', 'delete', 'get', 'list', 'patch', 'watch'];
const CHART_RULES: PolicyRule[] = [
  { apiGroups: ['*'], resources: ['*'], verbs: AGENT_VERBS },
  { apiGroups: [''], resources: ['events'], verbs: ['create'] },
];

const web = (replicas: number): KubeObject => ({
  apiVersion: 'apps/v1',
  kind: 'Deployment',
  metadata: { name: 'web', labels: { app: 'web' } },
  spec: {
    replicas,
    selector: { matchLabels: { app: 'web' } },
    template: {
      metadata: { labels: { app: 'web' } },
      spec: { containers: [{ name: 'web', image: 'nginx:1.27' }] },
    },
  },
});
const config = (name: string, namespace?: string): KubeObject => ({
  apiVersion: 'v1',
  kind: 'ConfigMap',
  metadata: { name, ...(namespace !== undefined && { namespace }) },
  data: { greeting: 'hello' },
});

/**
 * The test reads and edits through the simulator's API, not over HTTP, so that what kube-sim
 * records is the agent's requests alone.
 */
function live(h: AgentHarness, kind: 'ConfigMap' | 'Deployment', name: string, namespace = 'shop') {
  const rt =
    kind === 'Deployment' ? h.sim.api.rt('apps', 'v1', 'deployments') : h.sim.api.rt('', 'v1', 'configmaps');
  return h.sim.api.tryGet(rt, namespace, name) as { spec?: { replicas?: number } } | undefined;
}

function scaleOutOfBand(h: AgentHarness, replicas: number): void {
  h.sim.api.patch(
    h.sim.api.rt('apps', 'v1', 'deployments'),
    'shop',
    'web',
    'merge',
    { spec: { replicas } },
    {
      manager: 'kubectl-edit',
    },
  );
}

/** The agent's requests to the cluster, as the authorizer would see them. */
function resourceRequests(
  log: { method: string; path: string; query: string; userAgent: string; impersonate: string }[],
): ResourceAttributes[] {
  return log
    .map((r) => requestAttributes(r.method, r.path, r.query))
    .filter((a): a is ResourceAttributes => !('nonResource' in a));
}

/** Syncs, heals a drift, prunes (every verb the agent is granted), then is stopped. */
async function syncHealPrune(h: AgentHarness, namespaces?: string[]): Promise<void> {
  const first = h.hub.addBundle([web(2), config('web-config')]);
  h.hub.setAssignments([h.assignment({ bundleDigest: first })]);
  await h.runAgent(namespaces ? { namespaces } : {});
  await expect.poll(() => h.syncs().length, poll).toBe(1);
  expect(h.syncs()[0]).toMatchObject({ outcome: 'Succeeded' });

  // Seen through the watch (a namespaced one for a namespace-scoped agent), healed.
  scaleOutOfBand(h, 5);
  await expect.poll(() => h.drifts('healed').length, poll).toBe(1);
  await expect.poll(() => live(h, 'Deployment', 'web')?.spec?.replicas, poll).toBe(2);

  const second = h.hub.addBundle([web(2)]);
  h.hub.setAssignments([h.assignment({ bundleDigest: second, revision: 'rev-2' })]);
  await expect.poll(() => h.syncs().length, poll).toBe(2);
  await expect.poll(() => live(h, 'ConfigMap', 'web-config'), poll).toBeUndefined();
}

describe('agent: namespace-scoped (FLOTILLA_NAMESPACES), on kube-sim', () => {
  let h: AgentHarness;
  let log: { method: string; path: string; query: string; userAgent: string; impersonate: string }[];
  beforeAll(async () => {
    h = await AgentHarness.start('tenant');
    for (const name of ['shop', 'other'])
      await h.k8s.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name } });
    log = h.sim.recordRequests();
  });
  afterAll(async () => {
    await h.stop();
  });

  it('syncs, heals and prunes in its namespace with namespaced lists and watches only', async () => {
    await syncHealPrune(h, ['shop']);
    const requests = resourceRequests(log);
    // Everything it asked of the cluster (past discovery) was inside `shop`, and a Role there grants it.
    expect(requests.filter((r) => r.namespace !== 'shop')).toEqual([]);
    for (const r of requests) expect(allowedBy(CHART_RULES, r), JSON.stringify(r)).toBe(true);
    // Its lists and watches went to the namespace's collections: none cluster-wide.
    expect(requests.filter((r) => r.verb === 'watch').map((r) => r.resource)).toContain('deployments');
    expect(new Set(requests.map((r) => r.verb))).toEqual(new Set(AGENT_VERBS));
  });

  it('refuses cluster-scoped objects, objects in other namespaces and CreateNamespace, saying why, and applies nothing', async () => {
    const digest = h.hub.addBundle([
      config('allowed', 'shop'),
      config('elsewhere', 'other'),
      {
        apiVersion: 'rbac.authorization.k8s.io/v1',
        kind: 'ClusterRole',
        metadata: { name: 'reader' },
        rules: [{ apiGroups: [''], resources: ['pods'], verbs: ['get'] }],
      },
    ]);
    const before = h.syncs().length;
    h.hub.setAssignments([
      h.assignment({ bundleDigest: digest, revision: 'rev-3' }),
      h.assignment({
        targetId: 'target-made',
        name: 'made-east',
        namespace: 'made',
        bundleDigest: h.hub.addBundle([config('made-config')]),
        syncPolicy: { automated: true, selfHeal: true, prune: true, createNamespace: true },
      }),
    ]);
    const reported = (targetId: string) =>
      h
        .syncs()
        .slice(before)
        .some((s) => s.targetId === targetId);
    await expect.poll(() => reported('target-web') && reported('target-made'), poll).toBe(true);
    const limit =
      'this agent is limited to namespace(s) shop (FLOTILLA_NAMESPACES) and has no cluster-wide rights';
    const refused = h.syncs().find((s) => s.targetId === 'target-web' && s.revision === 'rev-3');
    expect(refused?.outcome).toBe('Failed');
    // (An automated sync is retried as any failed one is; the refusal stays until the revision changes.)
    expect(refused?.message).toMatch(
      /^2 object\(s\) outside this agent's namespaces \(shop\); nothing applied(;|$)/,
    );
    expect(refused?.resources).toEqual([
      {
        group: '',
        kind: 'ConfigMap',
        name: 'elsewhere',
        namespace: 'other',
        action: 'failed',
        message: `ConfigMap 'elsewhere': namespace 'other' refused: ${limit}`,
      },
      {
        group: 'rbac.authorization.k8s.io',
        kind: 'ClusterRole',
        name: 'reader',
        action: 'failed',
        message: `rbac.authorization.k8s.io/ClusterRole 'reader': cluster-scoped kind ClusterRole refused: ${limit}`,
      },
    ]);
    const made = h.syncs().find((s) => s.targetId === 'target-made');
    expect(made).toMatchObject({ outcome: 'Failed' });
    expect(made?.resources).toEqual([
      expect.objectContaining({
        kind: 'Namespace',
        name: 'made',
        message: `Namespace 'made': cluster-scoped kind Namespace refused: ${limit}`,
      }),
      expect.objectContaining({
        kind: 'ConfigMap',
        name: 'made-config',
        message: `ConfigMap 'made-config': namespace 'made' refused: ${limit}`,
      }),
    ]);
    // Nothing of either revision reached the cluster, not even what was inside `shop`.
    expect(live(h, 'ConfigMap', 'allowed')).toBeUndefined();
    expect(live(h, 'ConfigMap', 'elsewhere', 'other')).toBeUndefined();
    expect(live(h, 'ConfigMap', 'made-config', 'made')).toBeUndefined();
    // And it never reached beyond its namespace to find that out.
    expect(resourceRequests(log).filter((r) => r.namespace !== 'shop')).toEqual([]);
  });
});

describe('agent: cluster-wide, on kube-sim', () => {
  let h: AgentHarness;
  let log: { method: string; path: string; query: string; userAgent: string; impersonate: string }[];
  beforeAll(async () => {
    h = await AgentHarness.start('cluster-wide');
    await h.k8s.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'shop' } });
    log = h.sim.recordRequests();
  });
  afterAll(async () => {
    await h.stop();
  });

  it("uses every verb of the chart's ClusterRole and nothing it does not grant", async () => {
    await syncHealPrune(h);
    const requests = resourceRequests(log);
    for (const r of requests) expect(allowedBy(CHART_RULES, r), JSON.stringify(r)).toBe(true);
    expect(new Set(requests.map((r) => r.verb))).toEqual(new Set(AGENT_VERBS));
    // Its watches are cluster-wide: one per kind, whatever the namespace.
    expect(requests.filter((r) => r.verb === 'watch').every((r) => r.namespace === undefined)).toBe(true);
  });
});
