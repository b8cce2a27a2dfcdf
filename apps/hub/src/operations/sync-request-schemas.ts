// The bodies people send to ask for, cancel or terminate syncs, as zod schemas.
import { labelSelectorSchema } from '@flotilla/labels';
import { z } from 'zod';

const syncRequestSchema = z.strictObject({
  reason: z.string().trim().min(1, 'say why (it goes to the audit log and the sync history)').max(1000),
  /** Delete what Git no longer declares in this run, even when the appset does not prune. */
  prune: z.boolean().default(false),
  /** Ask the cluster what this sync would do (server-side apply with dryRun=All); change nothing. */
  dryRun: z.boolean().default(false),
  /** An agent that does not come back within this long never runs it (default one hour). */
  expiresInMinutes: z
    .number()
    .int()
    .min(1)
    .max(7 * 24 * 60)
    .default(60),
  /** Sync options for this run only, `Key=Value` as in an appset's syncOptions (the same table). */
  syncOptions: z.array(z.string().max(200)).max(20).default([]),
  /** Argo CD's `--force`: an object whose apply the API refuses is deleted and created again (Force=true). */
  force: z.boolean().default(false),
});

/** A declared object, as `flotilla sync --resource group/kind/namespace/name` names it. */
const resourceRefSchema = z.strictObject({
  group: z.string().max(253).default(''),
  kind: z.string().min(1).max(100),
  namespace: z.string().max(253).optional(),
  name: z.string().min(1).max(253),
});

/** One target: also a revision and a subset of its objects (they depend on what that target runs). */
export const singleSyncRequestSchema = syncRequestSchema.extend({
  /** The revision to sync: only the one the target is assigned (full or at least 7 hex digits). */
  revision: z.string().trim().min(1).max(64).optional(),
  /** Only these declared objects (a selective sync: no hooks, no prune, no waves waited for). */
  resources: z.array(resourceRefSchema).min(1).max(500).optional(),
});

export const bulkSyncRequestSchema = syncRequestSchema
  .extend({
    /** Every target of this appset (with `clusterSelector`: those on matching clusters). */
    appSet: z.string().trim().min(1).optional(),
    /** Targets on clusters whose labels match (with `appSet`: of that appset only). */
    clusterSelector: labelSelectorSchema.optional(),
    /** Say which targets would be asked, and ask none. */
    preview: z.boolean().default(false),
  })
  .refine((r) => r.appSet !== undefined || r.clusterSelector !== undefined, {
    message: 'name an appSet, a clusterSelector, or both (a sync of the whole fleet is not offered)',
    path: ['appSet'],
  });

export const batchQuerySchema = z.strictObject({ batchId: z.uuid() });

export const cancelRequestSchema = z.strictObject({
  reason: z.string().trim().min(1, 'say why (it goes to the audit log)').max(1000),
});
