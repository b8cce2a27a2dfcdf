import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type KubeObject, type TargetDeletion } from '@flotilla/contract';
import { AgentHarness, pollOptions as poll } from './testing/agent-harness.js';
import {
  type PolicyRule,
  type ResourceAttributes,
  allowedBy,
  requestAttributes,
} from './testing/rbac-request.js';

/**
 * The flotilla-agent chart's rules with `impersonation.projects` set (asserted in
 * test/deploy/helm-charts.spec.ts): the agent itself only reads, watches and writes Events, and may
 * impersonate the projects' ServiceAccounts in its own namespace.
 */
const AGENT_OWN_RULES: PolicyRule[] = [
  { apiGroups: ['*'], resources: ['*'], verbs: ['get', 'list', 'watch'] },
  { apiGroups: [''], resources: ['events'], verbs: ['create'] },
];
const SHOP_TEAM = 'system:serviceaccount:flotilla-system:flotilla-project-shop-team';

const config = (name: string): KubeObject => ({
  apiVersion: 'v1',
  kind: 'ConfigMap',
  metadata: { name },
  data: { greeting: 'hello' },
});

describe('agent: writes as the project ServiceAccount (FLOTILLA_IMPERSONATE_NAMESPACE), on kube-sim', () => {
  let h: AgentHarness;
  let log: { method: string; path: string; query: string; impersonate: string }[];
  beforeAll(async () => {
    h = await AgentHarness.start('impersonating');
    await h.k8s.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'shop' } });
    log = h.sim.recordRequests();
  });
  afterAll(async () => {
    await h.stop();
  });

  const requests = (as: string) =>
    log
      .filter((r) => r.impersonate === as)
      .map((r) => requestAttributes(r.method, r.path, r.query))
      .filter((a): a is ResourceAttributes => !('nonResource' in a));

  it("syncs, prunes and deletes the target as its project's ServiceAccount; as itself it only reads, watches and writes Events", async () => {
    const project = {
      name: 'shop-team',
      namespaces: ['shop'],
      clusterResourceWhitelist: [],
    };
    const first = h.hub.addBundle([config('one'), config('two')]);
    h.hub.setAssignments([h.assignment({ bundleDigest: first, project })]);
    await h.runAgent({ impersonateNamespace: 'flotilla-system', syncPollMs: 50 });
    await expect.poll(() => h.syncs().map((s) => s.outcome), poll).toEqual(['Succeeded']);

    const second = h.hub.addBundle([config('one')]);
    h.hub.setAssignments([h.assignment({ bundleDigest: second, revision: 'rev-2', project })]);
    await expect.poll(() => h.syncs().length, poll).toBe(2);
    expect(
      h
        .syncs()[1]
        ?.resources.map((r) => `${r.name}:${r.action}`)
        .sort(),
    ).toEqual(['one:unchanged', 'two:pruned']);

    const tombstone: TargetDeletion = {
      id: 'deletion-1',
      targetId: 'target-web',
      name: 'web-east',
      namespace: 'shop',
      bundleDigest: second,
    };
    h.hub.setAssignments([], [tombstone]);
    await expect.poll(() => h.hub.reportsOf('deletion').map((d) => d.outcome), poll).toEqual(['Succeeded']);

    // Every write of the target's objects went as the project's ServiceAccount…
    const asProject = requests(SHOP_TEAM);
    const writes = (list: ResourceAttributes[]) =>
      list.filter((r) => !['get', 'list', 'watch'].includes(r.verb) && r.resource !== 'events');
    expect(new Set(writes(asProject).map((r) => r.verb))).toEqual(new Set(['patch', 'delete']));
    expect(
      asProject
        .filter((r) => r.verb === 'delete')
        .map((r) => r.name)
        .sort(),
    ).toEqual(['one', 'two']);
    // …and none as the agent, whose own requests its read-only rules (plus Events) allow.
    const asAgent = requests('');
    expect(writes(asAgent)).toEqual([]);
    for (const r of asAgent) expect(allowedBy(AGENT_OWN_RULES, r), JSON.stringify(r)).toBe(true);
    expect(asAgent.filter((r) => r.verb === 'watch').map((r) => r.resource)).toContain('configmaps');
    // No other identity was used.
    expect(new Set(log.map((r) => r.impersonate))).toEqual(new Set(['', SHOP_TEAM]));
  });
});
