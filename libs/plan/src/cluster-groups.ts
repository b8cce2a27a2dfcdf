import { globMatch } from '@flotilla/windows';

/** What a ClusterGroup does: give `labels` to the clusters it picks by name or by name glob. */
export interface ClusterGroupSpec {
  clusters: readonly string[];
  clusterPatterns: readonly string[];
  labels: Readonly<Record<string, string>>;
}

export function groupPicks(group: ClusterGroupSpec, cluster: string): boolean {
  return group.clusters.includes(cluster) || group.clusterPatterns.some((p) => globMatch(p, cluster));
}

/**
 * A cluster's labels once the fleet's ClusterGroups move from `before` to `after`: the labels the
 * groups of `before` gave it are taken off, then those of `after` put on. Labels set through the
 * API on other keys are left alone.
 */
export function relabelCluster(
  cluster: string,
  labels: Readonly<Record<string, string>>,
  before: readonly ClusterGroupSpec[],
  after: readonly ClusterGroupSpec[],
): Record<string, string> {
  const next = { ...labels };
  for (const g of before) if (groupPicks(g, cluster)) for (const k of Object.keys(g.labels)) delete next[k];
  for (const g of after) if (groupPicks(g, cluster)) Object.assign(next, g.labels);
  return next;
}
