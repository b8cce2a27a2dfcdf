import { z } from 'zod';
import { objectComparisonSchema } from './agent-protocol.js';
import { apiAnswers } from './api-schemas.js';
import { healthStatusSchema, syncStatusSchema } from './status.js';
import { targetReasonSchema } from './target-reason.js';

/**
 * Targets, their sync history and the syncs people ask for, as the hub's people API returns them
 * (`/api/v1/targets`, `/api/v1/sync-runs`, `/api/v1/targets/:name/operations`); the CLI and the
 * console read them. Each schema is the type (`z.infer`) and the OpenAPI component of its name.
 */

/** One source of a multi-source target and the revision it resolved to. */
export const targetSourceViewSchema = z
  .object({
    repoUrl: z.string(),
    path: z
      .string()
      .optional()
      .describe(
        'a directory of a Git repository (`.` = its root); absent for a chart or a `ref:`-only source',
      ),
    chart: z.string().optional().describe('a chart from a Helm repository'),
    ref: z.string().optional().describe('the name `$ref/…` value files use for it'),
    targetRevision: z
      .string()
      .describe("what the source asks for: a branch, tag, commit or a chart's version range"),
    revision: z.string().describe('the commit, or the chart version, it resolved to'),
  })
  .register(apiAnswers, { id: 'TargetSourceView' });
export type TargetSourceView = z.infer<typeof targetSourceViewSchema>;

/** One target as `GET /api/v1/targets` lists it. */
export const targetListItemViewSchema = z
  .object({
    id: z.string(),
    name: z.string(),
    cluster: z.string(),
    appSet: z.string(),
    namespace: z.string(),
    repoUrl: z.string(),
    path: z.string(),
    targetRevision: z
      .string()
      .describe("one source: what it asks for; several (`spec.sources`): each one's, joined by commas"),
    desiredRevision: z
      .string()
      .describe(
        "the commit (or chart version) rendered; several sources: each one's, in order, joined by commas",
      ),
    sources: z
      .array(targetSourceViewSchema)
      .nullable()
      .describe('a multi-source target’s sources, each with what it resolved to; null for a single source'),
    bundleDigest: z.string().nullable(),
    releasedRevision: z
      .string()
      .nullable()
      .describe(
        'what the agent is given: the release (a rollout may hold it back), or a pin that overrides it',
      ),
    pin: z
      .object({
        revision: z.string(),
        reason: z.string(),
        actor: z.string(),
        expiresAt: z.string().nullable(),
      })
      .nullable(),
    syncPolicy: z.unknown(),
    syncStatus: syncStatusSchema,
    health: healthStatusSchema,
    healthMessage: z.string().nullable(),
    lastSyncedRevision: z.string().nullable(),
    lastSyncedAt: z.string().nullable(),
    lastReportAt: z.string().nullable(),
    reason: targetReasonSchema
      .nullable()
      .describe('the one current reason it is not Synced and Healthy at the wanted revision (null: it is)'),
    stale: z
      .object({ lastSeenAt: z.string().nullable() })
      .nullable()
      .describe(
        "set while its cluster's agent is offline: syncStatus and health are what that agent last reported; lastSeenAt null: never seen",
      ),
  })
  .register(apiAnswers, { id: 'TargetListItemView' });
export type TargetListItemView = z.infer<typeof targetListItemViewSchema>;

/** One sync run of the history (`GET /api/v1/sync-runs`). */
export const syncRunViewSchema = z
  .object({
    id: z.string(),
    target: z.string(),
    cluster: z.string(),
    appSet: z.string(),
    revision: z.string(),
    bundleDigest: z.string(),
    trigger: z.string(),
    outcome: z.string(),
    message: z.string(),
    startedAt: z.string(),
    finishedAt: z.string(),
    resources: z
      .unknown()
      .describe(
        'per object: what the run did (`{kind, name, namespace, action, message}`), as the agent reported it',
      ),
    reportId: z.string(),
    dryRun: z
      .boolean()
      .optional()
      .describe('only on a dry run: its resources say what a sync would have done; nothing was changed'),
    operationId: z
      .string()
      .optional()
      .describe('only on a run a person asked for: the id of the requested sync it carried out'),
  })
  .register(apiAnswers, { id: 'SyncRunView' });
export type SyncRunView = z.infer<typeof syncRunViewSchema>;

export const syncRunPageViewSchema = z
  .object({ items: z.array(syncRunViewSchema), nextCursor: z.string().nullable() })
  .register(apiAnswers, { id: 'SyncRunPageView' });
export type SyncRunPageView = z.infer<typeof syncRunPageViewSchema>;

/** A sync a person asked for (`POST /api/v1/targets/:name/sync`, `GET …/operations`). */
export const targetOperationViewSchema = z
  .object({
    id: z.string(),
    target: z.string(),
    kind: z.string(),
    prune: z.boolean(),
    dryRun: z
      .boolean()
      .describe('asked what the sync would do, changing nothing (the answer is the run marked dryRun)'),
    force: z.boolean().describe("Force=true for this run (Argo CD's `--force`)"),
    syncOptions: z.array(z.string()).describe('sync options for this run only (`Key=Value`)'),
    revision: z
      .string()
      .nullable()
      .describe('the revision asked for (always the one the target was assigned); null when none was named'),
    resources: z
      .array(
        z.object({ group: z.string(), kind: z.string(), namespace: z.string().optional(), name: z.string() }),
      )
      .describe('a selective sync: only these objects; empty for the whole target'),
    batchId: z
      .string()
      .nullable()
      .describe('set when it was asked with others (an appset or a cluster selection) in one request'),
    requestedBy: z.string(),
    reason: z.string(),
    state: z
      .string()
      .describe('Pending, Succeeded, Failed, Partial, Blocked, Terminated, Expired or Cancelled'),
    message: z.string(),
    createdAt: z.string(),
    expiresAt: z.string(),
    finishedAt: z.string().nullable(),
    terminate: z
      .object({ requestedBy: z.string(), reason: z.string(), requestedAt: z.string() })
      .nullable()
      .describe("set once a person asked to stop it; the agent's report then closes it"),
  })
  .register(apiAnswers, { id: 'TargetOperationView' });
export type TargetOperationView = z.infer<typeof targetOperationViewSchema>;

export const targetOperationListSchema = z
  .array(targetOperationViewSchema)
  .register(apiAnswers, { id: 'TargetOperationList' });

/** The answer to a sync of many targets: one operation per target asked, and those left out and why. */
export const bulkSyncViewSchema = z
  .object({
    batchId: z
      .string()
      .nullable()
      .describe("shared by the batch's operations and audit events; null for a preview"),
    preview: z.boolean().describe('true when nothing was asked: `targets` are the ones that would be'),
    targets: z.array(z.string()),
    operations: z.array(targetOperationViewSchema),
    skipped: z.array(z.object({ target: z.string(), reason: z.string() })),
  })
  .register(apiAnswers, { id: 'BulkSyncView' });
export type BulkSyncView = z.infer<typeof bulkSyncViewSchema>;

/**
 * `GET /api/v1/targets/:name/diff`: what a sync would change on the target's cluster, from its
 * agent's latest comparison. `comparison` is null until the agent compared anything; `current`
 * says whether it compared the revision and bundle the target wants now (an older one describes a
 * state Git has moved on from).
 */
export const targetDiffViewSchema = z
  .object({
    target: z.string(),
    cluster: z.string(),
    desiredRevision: z.string(),
    bundleDigest: z.string().nullable(),
    syncStatus: syncStatusSchema,
    comparison: z
      .object({
        observedAt: z.string(),
        revision: z.string(),
        bundleDigest: z.string(),
        current: z.boolean(),
        inSync: z.boolean(),
        compared: z.number().int(),
        truncated: z.boolean(),
        objects: z.array(objectComparisonSchema),
      })
      .nullable(),
  })
  .register(apiAnswers, { id: 'TargetDiffView' });
export type TargetDiffView = z.infer<typeof targetDiffViewSchema>;

/** A target's deletion with its objects (`POST /api/v1/targets/:name/delete`). */
export const targetDeletionViewSchema = z
  .object({
    target: z.string(),
    deletionId: z.string(),
    state: z
      .enum(['Pending', 'Failed', 'Deleted'])
      .describe(
        'Pending: its agent deletes the objects and reports; Failed: it could not (message says why; ask again); Deleted: gone',
      ),
    requestedBy: z.string(),
    reason: z.string(),
    requestedAt: z.string(),
    message: z.string(),
  })
  .register(apiAnswers, { id: 'TargetDeletionView' });
export type TargetDeletionView = z.infer<typeof targetDeletionViewSchema>;
