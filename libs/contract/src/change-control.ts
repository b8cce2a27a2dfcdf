import { z } from 'zod';
import { apiAnswers } from './api-schemas.js';
import { objectRefSchema } from './kube-object.js';
import { syncWindowSchema } from './sync-window.js';

/**
 * Sync windows and break-glass overrides as the hub's people API returns them
 * (`/api/v1/windows`, `/api/v1/targets/:name/windows`, `/api/v1/break-glass`). The hub writes them
 * and the CLI reads them, so both use these definitions.
 */

/** A named, versioned sync window: the window's own fields plus its name and bookkeeping. */
export const syncWindowViewSchema = syncWindowSchema
  .extend({
    name: z.string(),
    projects: z
      .array(z.string())
      .describe('the projects whose targets the window governs; empty means every project'),
    version: z.number().int(),
    description: z.string(),
    createdAt: z.string(),
    updatedAt: z.string(),
  })
  .register(apiAnswers, { id: 'SyncWindowView' });
export type SyncWindowView = z.infer<typeof syncWindowViewSchema>;

/** One immutable version of a window: what it said, who changed it, when and why. */
export const syncWindowVersionViewSchema = z
  .object({
    version: z.number().int(),
    change: z.enum(['created', 'updated', 'deleted']),
    window: syncWindowSchema,
    projects: z.array(z.string()),
    description: z.string(),
    actor: z.string(),
    reason: z.string(),
    at: z.string(),
  })
  .register(apiAnswers, { id: 'SyncWindowVersionView' });
export type SyncWindowVersionView = z.infer<typeof syncWindowVersionViewSchema>;

export const syncWindowHistorySchema = z
  .array(syncWindowVersionViewSchema)
  .register(apiAnswers, { id: 'SyncWindowHistory' });

/** `GET /api/v1/windows/:name/calendar`: when the window is active in a range, for a calendar. */
export const syncWindowCalendarViewSchema = z
  .object({
    window: z.string(),
    kind: z.enum(['allow', 'deny']),
    timeZone: z
      .string()
      .describe("the zone its schedule is read in; a client draws the intervals in it and in the viewer's"),
    from: z.string(),
    to: z.string(),
    intervals: z
      .array(z.object({ start: z.string(), end: z.string() }))
      .describe('active strictly between start and end (ISO instants), clipped to the range'),
  })
  .register(apiAnswers, { id: 'SyncWindowCalendarView' });
export type SyncWindowCalendarView = z.infer<typeof syncWindowCalendarViewSchema>;

/** An override as it travels to agents (the assignment's `breakGlass` entries). */
export const breakGlassOverrideViewSchema = z
  .object({
    id: z.string(),
    reason: z.string(),
    expiresAt: z.string(),
    allowSyncOutsideWindows: z.boolean(),
    pauseSelfHeal: z.boolean(),
  })
  .register(apiAnswers, { id: 'BreakGlassOverrideView' });
export type BreakGlassOverrideView = z.infer<typeof breakGlassOverrideViewSchema>;

/** What the windows mean for one target now. */
export const targetWindowsViewSchema = z
  .object({
    target: z.string(),
    cluster: z.string(),
    at: z.string(),
    windows: z
      .array(
        z.object({
          name: z.string(),
          kind: z.enum(['allow', 'deny']),
          schedule: z.string(),
          duration: z.string(),
          timeZone: z.string(),
          active: z.boolean(),
        }),
      )
      .describe('the windows that apply to the target, each with whether it is active now'),
    canSync: z.boolean().describe('may an automatic sync or self-heal run now?'),
    canSyncManually: z
      .boolean()
      .describe("may a person's manual sync run now (`manualSync` windows let it through)?"),
    nextOpen: z
      .string()
      .nullable()
      .describe('when automatic syncs are next allowed (now when they are); null if not within a year'),
    heldBy: z
      .array(z.string())
      .describe(
        'the windows holding automatic syncs now, by name: the active deny windows, else the allow windows it waits for; empty when it may sync; with nextOpen null they are always in force and end only when changed or deleted',
      ),
    nextClose: z
      .string()
      .nullable()
      .describe('when automatic syncs next stop being allowed; null when blocked now or nothing closes'),
    breakGlass: z
      .array(breakGlassOverrideViewSchema)
      .describe('active break-glass overrides covering the target'),
    pending: z
      .object({
        revision: z.string(),
        trigger: z.string(),
        since: z.string(),
        message: z.string(),
        eligibleAt: z.string().nullable(),
      })
      .nullable()
      .describe(
        "the change a window holds back (the agent's last run is Blocked); eligibleAt: when the windows let it through, null when nothing opens within a year",
      ),
  })
  .register(apiAnswers, { id: 'TargetWindowsView' });
export type TargetWindowsView = z.infer<typeof targetWindowsViewSchema>;

export const BREAK_GLASS_SCOPES = ['cluster', 'appset', 'target'] as const;
export type BreakGlassScope = (typeof BREAK_GLASS_SCOPES)[number];
export type BreakGlassState = 'active' | 'closed' | 'expired';

export const breakGlassViewSchema = z
  .object({
    id: z.number().int(),
    scope: z.enum(BREAK_GLASS_SCOPES),
    name: z.string().describe("the cluster's, appset's or target's name"),
    reason: z.string(),
    allowSyncOutsideWindows: z.boolean(),
    pauseSelfHeal: z.boolean(),
    state: z.enum(['active', 'closed', 'expired']),
    openedBy: z.string(),
    openedAt: z.string(),
    expiresAt: z.string(),
    closedAt: z.string().nullable(),
    closedBy: z.string().nullable(),
    closeReason: z.string().nullable(),
    manualChanges: z.number().int().describe('how many manual changes agents reported under it'),
  })
  .register(apiAnswers, { id: 'BreakGlassView' });
export type BreakGlassView = z.infer<typeof breakGlassViewSchema>;

/** One drift an agent saw while the override was in force: "manual change under break-glass #N". */
export const manualChangeViewSchema = z
  .object({
    summary: z.string(),
    target: z.string(),
    cluster: z.string(),
    resource: objectRefSchema,
    paths: z.array(z.string()),
    manager: z
      .string()
      .nullable()
      .describe('the field manager that made the change, when the agent could tell'),
    state: z.string().describe('tolerated (self-heal paused) or healed (synced under the override)'),
    at: z.string(),
  })
  .register(apiAnswers, { id: 'ManualChangeView' });
export type ManualChangeView = z.infer<typeof manualChangeViewSchema>;

/** `GET /api/v1/break-glass/:id/record`: the post-incident record. */
export const breakGlassRecordViewSchema = z
  .object({ breakGlass: breakGlassViewSchema, changes: z.array(manualChangeViewSchema) })
  .register(apiAnswers, { id: 'BreakGlassRecordView' });
export type BreakGlassRecordView = z.infer<typeof breakGlassRecordViewSchema>;
