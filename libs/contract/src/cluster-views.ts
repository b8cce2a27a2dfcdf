/**
 * Clusters as the hub's people API returns them (`/api/v1/clusters`); the CLI reads them, the hub
 * builds them (clusters.service.ts).
 */

/** How a cluster's targets stand, counted. */
export interface ClusterTargetCountsView {
  total: number;
  synced: number;
  outOfSync: number;
  unknown: number;
  healthy: number;
  degraded: number;
}

/** One cluster (`GET /api/v1/clusters`, `GET /api/v1/clusters/:name`). */
export interface ClusterView {
  id: string;
  name: string;
  server: string;
  labels: Record<string, string>;
  annotations: Record<string, string>;
  registered: boolean;
  agentVersion: string | null;
  /** What its agent announces it can do beyond a plain sync (AGENT_FEATURES); empty: none. */
  agentFeatures: string[];
  /** What its agent reported of discovery, which its charts render with; null until it reports. */
  capabilities: { kubeVersion: string; apiVersions: string[]; reportedAt: string | null } | null;
  lastSeenAt: string | null;
  createdAt: string;
  targets: ClusterTargetCountsView;
}

/**
 * A cluster just added (`POST /api/v1/clusters`) or given a new bootstrap token
 * (`POST /api/v1/clusters/:name/bootstrap-token`): the token is shown only in this answer.
 */
export interface RegisteredClusterView {
  cluster: ClusterView;
  bootstrapToken: string;
  expiresAt: string;
}
