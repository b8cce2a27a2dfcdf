import { z } from 'zod';
import { labelSelectorSchema, metadataSchema, objectNameSchema } from '@flotilla/labels';
import { FLOTILLA_API_VERSION, groupKindSchema } from './common.js';

/** Where a project's ApplicationSets may deploy: clusters by name glob or by labels, and a namespace glob. */
export const destinationSchema = z
  .strictObject({
    cluster: z.string().min(1).optional(),
    clusterSelector: labelSelectorSchema.optional(),
    namespace: z.string().min(1),
  })
  .superRefine((d, ctx) => {
    if ((d.cluster === undefined) === (d.clusterSelector === undefined))
      ctx.addIssue({
        code: 'custom',
        message: 'give exactly one of cluster (a name glob) or clusterSelector (labels)',
        path: ['cluster'],
      });
  });

/**
 * A project bounds what its ApplicationSets may do, in the spirit of Argo CD's AppProject: which
 * repositories they may use (globs; a leading `!` denies), where they may deploy, which
 * cluster-scoped kinds they may create and namespaced kinds they may not, and which SyncWindows apply.
 */
export const projectSpecSchema = z.strictObject({
  description: z.string().optional(),
  sourceRepos: z.array(z.string().min(1)).min(1, 'list at least one repository glob (use * for any)'),
  destinations: z.array(destinationSchema).default([]),
  clusterResourceWhitelist: z.array(groupKindSchema).default([]),
  clusterResourceBlacklist: z.array(groupKindSchema).default([]),
  namespaceResourceWhitelist: z.array(groupKindSchema).optional(),
  namespaceResourceBlacklist: z.array(groupKindSchema).default([]),
  syncWindows: z.array(objectNameSchema).default([]),
});

export const projectObjectSchema = z.strictObject({
  apiVersion: z.literal(FLOTILLA_API_VERSION),
  kind: z.literal('Project'),
  metadata: metadataSchema,
  spec: projectSpecSchema,
});

export type ProjectObject = z.infer<typeof projectObjectSchema>;
export type ProjectDestination = z.infer<typeof destinationSchema>;
