import { z } from 'zod';
import { apiAnswers, listingSchema } from './api-schemas.js';
import { appSetViewSchema, gitSourceViewSchema, pendingExpansionViewSchema } from './appset-views.js';
import { breakGlassViewSchema, syncWindowViewSchema } from './change-control.js';
import { clusterViewSchema } from './cluster-views.js';
import { fleetSourceViewSchema } from './fleet-source-views.js';
import { pinViewSchema } from './pin-views.js';
import { verificationModeSchema } from './source-verification.js';
import { targetListItemViewSchema } from './target-views.js';

/**
 * The rest of the people API's answers as the hub builds them (projects, pins, repositories, fleet
 * sources, the audit log, probes), and every listing's `<Name>Listing`: the schema is the type the
 * hub's code returns (a service's return is checked against it where it is built) and the OpenAPI
 * component of its name.
 */

/** A Project (`/api/v1/projects`): its stored document and where it came from. */
export const projectViewSchema = z
  .object({
    name: z.string(),
    source: gitSourceViewSchema,
    createdAt: z.string(),
    updatedAt: z.string(),
    document: z.unknown().describe('the Project document as applied'),
  })
  .register(apiAnswers, { id: 'ProjectView' });
export type ProjectView = z.infer<typeof projectViewSchema>;

export const pinListSchema = z.array(pinViewSchema).register(apiAnswers, { id: 'PinList' });

export const unpinnedViewSchema = z
  .object({ unpinned: z.array(z.string()).describe('the targets unpinned, by name') })
  .register(apiAnswers, { id: 'UnpinnedView' });

/** A Git repository the hub mirrors (`/api/v1/repositories`): never its secret. */
export const repositoryViewSchema = z
  .object({
    id: z.string(),
    url: z.string(),
    hasCredentials: z.boolean(),
    credentials: z
      .object({ type: z.string(), username: z.string().nullable() })
      .nullable()
      .describe('the kind of credentials and the (public) HTTPS username'),
    status: z.string(),
    error: z.string().nullable(),
    lastFetchedAt: z.string().nullable(),
    lastAttemptAt: z.string().nullable(),
    refs: z.record(z.string(), z.string()).describe('each tracked ref and the commit it resolved to'),
    lastFetchedCommit: z.string().nullable(),
    verificationMode: verificationModeSchema.describe(
      'signed commits it requires (none, head, strict); the keys: GET /api/v1/repositories/:id/verification',
    ),
  })
  .register(apiAnswers, { id: 'RepositoryView' });
export type RepositoryView = z.infer<typeof repositoryViewSchema>;

export const queuedFetchViewSchema = z
  .object({ repositoryId: z.string(), queued: z.literal(true) })
  .register(apiAnswers, { id: 'QueuedFetchView' });

/** What applying (or confirming) a fleet repository's commit did. */
export const fleetOutcomeViewSchema = z
  .object({
    status: z.enum(['Ready', 'Error', 'Held', 'Gone']),
    commit: z.string().optional(),
    created: z.array(z.string()),
    updated: z.array(z.string()),
    deleted: z.array(z.string()),
    error: z.unknown().optional(),
  })
  .register(apiAnswers, { id: 'FleetOutcomeView' });

/** What an expansion did (`POST /api/v1/appsets/:name/confirm-expansion`). */
export const expansionOutcomeViewSchema = z
  .object({
    status: z.enum(['Ready', 'Error', 'Gone', 'Held']),
    created: z.number().int(),
    updated: z.number().int(),
    deleted: z.number().int(),
    error: z.object({ code: z.string(), message: z.string(), path: z.string().optional() }).optional(),
    held: pendingExpansionViewSchema.optional(),
  })
  .register(apiAnswers, { id: 'ExpansionOutcomeView' });

/** `POST /api/v1/audit/prune`: how many events went, and the checkpoint verification starts at. */
export const auditPruneViewSchema = z
  .object({
    pruned: z.number().int(),
    checkpoint: z.object({
      throughId: z.string(),
      hash: z.string(),
      events: z.number().int(),
      sha256: z.string(),
      prunedBy: z.string(),
      prunedAt: z.string(),
      lanes: z
        .array(
          z.object({
            lane: z.number().int(),
            throughId: z.string(),
            hash: z.string(),
            events: z.number().int(),
          }),
        )
        .optional()
        .describe("each lane's checkpoint: where its chain now starts"),
    }),
  })
  .register(apiAnswers, { id: 'AuditPruneView' });

export const livenessViewSchema = z
  .object({ status: z.literal('ok') })
  .register(apiAnswers, { id: 'LivenessView' });

/** `GET /readyz` (200 ready, 503 not): each dependency's answer, and a development hub's warnings. */
export const readinessViewSchema = z
  .object({
    status: z.enum(['ready', 'not-ready']),
    checks: z.object({ database: z.string(), redis: z.string() }),
    mode: z.literal('development').optional(),
    warnings: z.array(z.string()).optional(),
  })
  .register(apiAnswers, { id: 'ReadinessView' });

export const clusterListingSchema = listingSchema(clusterViewSchema, 'Cluster');
export const appSetListingSchema = listingSchema(appSetViewSchema, 'AppSet');
export const targetListingSchema = listingSchema(targetListItemViewSchema, 'Target');
export const projectListingSchema = listingSchema(projectViewSchema, 'Project');
export const syncWindowListingSchema = listingSchema(syncWindowViewSchema, 'SyncWindow');
export const pinListingSchema = listingSchema(pinViewSchema, 'Pin');
export const repositoryListingSchema = listingSchema(repositoryViewSchema, 'Repository');
export const fleetSourceListingSchema = listingSchema(fleetSourceViewSchema, 'FleetSource');
export const breakGlassListingSchema = listingSchema(breakGlassViewSchema, 'BreakGlass');

/** `POST /api/v1/webhooks/git`: the repositories a push names, each fetched; a ping is `{ok: true}`. */
export const webhookAnswerViewSchema = z
  .union([
    z.object({ ok: z.literal(true) }),
    z.object({
      matched: z.array(z.string()).describe('the ids of the registered repositories the push names'),
      queued: z.number().int(),
      ignored: z.string().optional().describe('why nothing was done (an event that is not a push)'),
    }),
  ])
  .register(apiAnswers, { id: 'WebhookAnswerView' });
