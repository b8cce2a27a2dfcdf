import { z } from 'zod';

/** A Kubernetes API group and kind; either may be a glob (`*` for any). The core group is ''. */
export const groupKindPatternSchema = z.object({ group: z.string(), kind: z.string().min(1) });
export type GroupKindPattern = z.infer<typeof groupKindPatternSchema>;

/**
 * What a target's project lets the agent create on this cluster, resolved by the hub for that
 * cluster. The agent checks every object of a bundle against it before applying any.
 */
export const projectRestrictionsSchema = z.object({
  /** The project's name, quoted in refusals. */
  name: z.string(),
  /** Namespace globs the project's destinations allow on this cluster; empty allows none. */
  namespaces: z.array(z.string()),
  /** Cluster-scoped kinds the project may create; empty allows none (as Argo CD's AppProject). */
  clusterResourceWhitelist: z.array(groupKindPatternSchema),
  clusterResourceBlacklist: z.array(groupKindPatternSchema).default([]),
  /** Namespaced kinds allowed; absent allows every namespaced kind not blacklisted. */
  namespaceResourceWhitelist: z.array(groupKindPatternSchema).optional(),
  namespaceResourceBlacklist: z.array(groupKindPatternSchema).default([]),
});
export type ProjectRestrictions = z.infer<typeof projectRestrictionsSchema>;
