import { syncWindowSchema } from '@flotilla/contract';
import { z } from 'zod';
import { metadataSchema, objectNameSchema } from '@flotilla/labels';
import { FLOTILLA_API_VERSION } from './common.js';

/**
 * A named sync window: the contract's window (allow/deny, cron, duration, time zone, selectors),
 * narrowed to the ApplicationSets of some projects when `projects` is given.
 */
export const syncWindowSpecSchema = z.strictObject({
  ...syncWindowSchema.shape,
  projects: z.array(objectNameSchema).default([]),
});

export const syncWindowObjectSchema = z.strictObject({
  apiVersion: z.literal(FLOTILLA_API_VERSION),
  kind: z.literal('SyncWindow'),
  metadata: metadataSchema,
  spec: syncWindowSpecSchema,
});

export type SyncWindowObject = z.infer<typeof syncWindowObjectSchema>;
