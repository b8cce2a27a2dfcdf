import { z } from 'zod';
import { apiAnswers } from './api-schemas.js';
import { peopleRoleSchema } from './api-token.js';
import type { RolloutDetailView, RolloutView } from './appset-views.js';
import type { FleetEventView, FleetView, SessionView } from './fleet-view.js';
import { healthStatusSchema, syncStatusSchema } from './status.js';
import { targetReasonSchema } from './target-reason.js';

/**
 * The console's views as zod schemas, for the hub's OpenAPI document (each registered in `apiAnswers`): what a
 * client of `/api/v1/fleet`, `/api/v1/session`, `/api/v1/events` and `/api/v1/rollouts/:appSet`
 * may rely on. Each is checked at compile time to describe exactly its interface (the `Same`
 * lines below), so the published schema cannot drift from what the hub sends.
 */

const fleetCellViewSchema = z.object({
  target: z.string(),
  appSet: z.string(),
  project: z.string(),
  syncStatus: syncStatusSchema,
  health: healthStatusSchema,
  desiredRevision: z.string(),
  lastSyncedRevision: z.string().nullable(),
  reason: targetReasonSchema.nullable(),
  automated: z.boolean(),
  stale: z.boolean().describe("its cluster's agent is offline: sync and health are as last reported"),
});

const fleetRowViewSchema = z.object({
  cluster: z.string(),
  labels: z.record(z.string(), z.string()),
  online: z.boolean(),
  lastSeenAt: z.string().nullable(),
  cells: z.array(fleetCellViewSchema),
});

export const fleetViewSchema = z.object({
  appSets: z.array(z.string()).describe("the ApplicationSets among the matches: the matrix's columns"),
  rows: z.array(fleetRowViewSchema),
  counts: z
    .object({
      clusters: z.number().int(),
      offlineClusters: z.number().int(),
      targets: z.number().int(),
      sync: z.record(syncStatusSchema, z.number().int()),
      health: z.record(healthStatusSchema, z.number().int()),
    })
    .describe('over every match of the filters, not only this page'),
  nextCursor: z.string().nullable().describe('pass back as cursor for the next page; null on the last'),
  at: z.string(),
});

export const sessionViewSchema = z.object({
  subject: z.string(),
  role: peopleRoleSchema,
  open: z.boolean().describe('the hub runs without people authentication (a development hub)'),
});

/** The data of each `event: fleet` of the Server-Sent Events stream. */
export const fleetEventViewSchema = z.object({
  targets: z.array(z.string()),
  clusters: z.array(z.string()),
  policies: z.boolean(),
  appSets: z.array(z.string()),
  at: z.string(),
});

export const rolloutViewSchema = z.object({
  appSet: z.string(),
  revision: z.string(),
  status: z.string().describe('Progressing, Paused, Halted, Completed or Superseded'),
  step: z.string().nullable(),
  stepIndex: z.number().int(),
  steps: z.array(z.string()),
  message: z.string().describe('why it waits, in words'),
  stepStartedAt: z.string(),
  bakeStartedAt: z.string().nullable(),
  progress: z.object({
    released: z.record(z.string(), z.string()),
    failed: z.record(z.string(), z.string()),
    skipped: z.record(z.string(), z.string()),
  }),
  createdAt: z.string(),
  finishedAt: z.string().nullable(),
});

export const rolloutDetailViewSchema = rolloutViewSchema.extend({
  targetCount: z.number().int().describe('every target of the appset, not only this page'),
  nextCursor: z.string().nullable().describe('the next page of targets; null on the last, and unpaged'),
  targets: z.array(
    z.object({
      name: z.string(),
      cluster: z.string(),
      desiredRevision: z.string(),
      releasedRevision: z.string().nullable(),
      lastSyncedRevision: z.string().nullable(),
      health: z.string(),
      pinnedAt: z.string().nullable(),
      releasedAt: z.string().nullable(),
      failed: z.string().nullable(),
      skipped: z.string().nullable(),
    }),
  ),
});

fleetViewSchema.register(apiAnswers, { id: 'FleetView' });
sessionViewSchema.register(apiAnswers, { id: 'SessionView' });
fleetEventViewSchema.register(apiAnswers, { id: 'FleetEventView' });
rolloutViewSchema.register(apiAnswers, { id: 'RolloutView' });
rolloutDetailViewSchema.register(apiAnswers, { id: 'RolloutDetailView' });
export const rolloutListSchema = z.array(rolloutViewSchema).register(apiAnswers, { id: 'RolloutList' });

type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
const described: [
  Same<z.infer<typeof fleetViewSchema>, FleetView>,
  Same<z.infer<typeof sessionViewSchema>, SessionView>,
  Same<z.infer<typeof fleetEventViewSchema>, FleetEventView>,
  Same<z.infer<typeof rolloutViewSchema>, RolloutView>,
  Same<z.infer<typeof rolloutDetailViewSchema>, RolloutDetailView>,
] = [true, true, true, true, true];
void described;
