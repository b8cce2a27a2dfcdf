// Which inventory cluster a generated target's destination names, and what the generators see of each cluster.
import type { ClusterInfo, GeneratedTarget } from '@flotilla/generators';
import { asRecord } from '../common/json.js';
import type { Cluster } from '../generated/prisma/client.js';
import { ExpansionError } from './expansion-error.js';

export interface ClusterIndex {
  byName: Map<string, Cluster>;
  /** The first cluster (by name) with each non-empty server, as a linear search in name order finds. */
  byServer: Map<string, Cluster>;
}

/** `clusters` in name order, looked up by name and by server. */
export function indexClusters(clusters: Cluster[]): ClusterIndex {
  const index: ClusterIndex = { byName: new Map(), byServer: new Map() };
  for (const c of clusters) {
    index.byName.set(c.name, c);
    if (c.server !== '' && !index.byServer.has(c.server)) index.byServer.set(c.server, c);
  }
  return index;
}

/** The cluster `spec.destination` names (by name, else by server); `at` names the target for errors. */
export function clusterOf(t: GeneratedTarget, clusters: ClusterIndex, at: string): Cluster {
  const d = t.application.spec.destination;
  if (d.name) {
    const c = clusters.byName.get(d.name);
    if (!c)
      throw new ExpansionError(
        'unknown-cluster',
        `destination cluster "${d.name}" is not in the inventory; POST /api/v1/clusters first`,
        `${at}.spec.destination.name`,
      );
    return c;
  }
  if (d.server) {
    const c = clusters.byServer.get(d.server);
    if (!c)
      throw new ExpansionError(
        'unknown-cluster',
        `no cluster in the inventory has server ${d.server}`,
        `${at}.spec.destination.server`,
      );
    return c;
  }
  throw new ExpansionError(
    'invalid-target',
    'spec.destination needs a cluster name or server',
    `${at}.spec.destination`,
  );
}

/** A cluster as the cluster generator sees it. */
export function clusterInfo(c: Cluster): ClusterInfo {
  return { name: c.name, server: c.server, labels: asRecord(c.labels), annotations: asRecord(c.annotations) };
}
