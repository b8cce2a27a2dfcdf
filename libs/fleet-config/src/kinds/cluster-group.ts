import { z } from 'zod';
import { labelsSchema, metadataSchema } from '@flotilla/labels';
import { FLOTILLA_API_VERSION } from './common.js';

/**
 * Labels given to a group of clusters, picked by exact name or by name glob, so that cluster labels
 * (which selectors, generators and rollout steps read) are reviewed in Git like everything else.
 */
export const clusterGroupSpecSchema = z
  .strictObject({
    clusters: z.array(z.string().min(1)).default([]),
    clusterPatterns: z.array(z.string().min(1)).default([]),
    labels: labelsSchema.refine((l) => Object.keys(l).length > 0, 'give at least one label'),
  })
  .superRefine((spec, ctx) => {
    if (spec.clusters.length === 0 && spec.clusterPatterns.length === 0)
      ctx.addIssue({
        code: 'custom',
        message: 'pick clusters with clusters (names) or clusterPatterns (globs)',
        path: ['clusters'],
      });
  });

export const clusterGroupObjectSchema = z.strictObject({
  apiVersion: z.literal(FLOTILLA_API_VERSION),
  kind: z.literal('ClusterGroup'),
  metadata: metadataSchema,
  spec: clusterGroupSpecSchema,
});

export type ClusterGroupObject = z.infer<typeof clusterGroupObjectSchema>;
