// The cluster labels a fleet source's ClusterGroups put on clusters, before and after a commit.
import type { FleetPlan, ManagedEntry } from './fleet-plan.js';

/** A ClusterGroup's spec: the clusters it picks (by name or pattern) and the labels it gives them. */
export interface GroupSpec {
  clusters: string[];
  clusterPatterns: string[];
  labels: Record<string, string>;
}

/**
 * This source's ClusterGroups as last applied (`before`) and as the commit has them (`after`): the
 * labels of `before` are taken off the clusters they picked, then those of `after` are put on.
 */
export function managedGroups(
  plan: FleetPlan,
  managed: readonly ManagedEntry[],
  sourceId: string,
): { before: GroupSpec[]; after: GroupSpec[] } {
  const before = managed
    .filter((m) => m.kind === 'ClusterGroup' && m.fleetSourceId === sourceId)
    .map((m) => groupSpec(m.object));
  const after = [...plan.create, ...plan.update, ...plan.unchanged]
    .filter((o) => o.kind === 'ClusterGroup')
    .map((o) => groupSpec(o.object));
  return { before, after };
}

function groupSpec(object: unknown): GroupSpec {
  const spec = (object as { spec?: Partial<GroupSpec> }).spec ?? {};
  return {
    clusters: spec.clusters ?? [],
    clusterPatterns: spec.clusterPatterns ?? [],
    labels: spec.labels ?? {},
  };
}

/** Whether two label sets hold the same keys and values, in whatever order. */
export function sameLabels(a: Record<string, string>, b: Record<string, string>): boolean {
  return JSON.stringify(sortKeys(a)) === JSON.stringify(sortKeys(b));
}

function sortKeys(o: Record<string, string>): [string, string][] {
  return Object.entries(o).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
}
