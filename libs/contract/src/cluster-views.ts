import { z } from 'zod';
import { apiAnswers } from './api-schemas.js';

/**
 * Clusters as the hub's people API returns them (`/api/v1/clusters`); the CLI reads them, the hub
 * builds them (clusters.service.ts).
 */

/** How a cluster's targets stand, counted. */
export const clusterTargetCountsViewSchema = z
  .object({
    total: z.number().int(),
    synced: z.number().int(),
    outOfSync: z.number().int(),
    unknown: z.number().int(),
    healthy: z.number().int(),
    degraded: z.number().int(),
  })
  .register(apiAnswers, { id: 'ClusterTargetCountsView' });
export type ClusterTargetCountsView = z.infer<typeof clusterTargetCountsViewSchema>;

/** One cluster (`GET /api/v1/clusters`, `GET /api/v1/clusters/:name`). */
export const clusterViewSchema = z
  .object({
    id: z.string(),
    name: z.string(),
    server: z.string(),
    labels: z.record(z.string(), z.string()),
    annotations: z.record(z.string(), z.string()),
    registered: z.boolean(),
    agentVersion: z.string().nullable(),
    agentFeatures: z
      .array(z.string())
      .describe('what its agent announces it can do beyond a plain sync (AGENT_FEATURES); empty: none'),
    capabilities: z
      .object({
        kubeVersion: z.string(),
        apiVersions: z.array(z.string()),
        reportedAt: z.string().nullable(),
      })
      .nullable()
      .describe('what its agent reported of discovery, which its charts render with; null until it reports'),
    lastSeenAt: z.string().nullable(),
    createdAt: z.string(),
    targets: clusterTargetCountsViewSchema,
  })
  .register(apiAnswers, { id: 'ClusterView' });
export type ClusterView = z.infer<typeof clusterViewSchema>;

/**
 * A cluster just added (`POST /api/v1/clusters`) or given a new bootstrap token
 * (`POST /api/v1/clusters/:name/bootstrap-token`): the token is shown only in this answer.
 */
export const registeredClusterViewSchema = z
  .object({ cluster: clusterViewSchema, bootstrapToken: z.string(), expiresAt: z.string() })
  .register(apiAnswers, { id: 'RegisteredClusterView' });
export type RegisteredClusterView = z.infer<typeof registeredClusterViewSchema>;
