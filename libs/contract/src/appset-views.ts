import { z } from 'zod';
import { apiAnswers } from './api-schemas.js';
import { targetSourceViewSchema } from './target-views.js';

/**
 * ApplicationSets and their rollouts as the hub's people API returns them (`/api/v1/appsets`,
 * `/api/v1/rollouts`); the CLI and the console read them.
 */

/** Where an object came from: the API, or a fleet repository's file at a commit (then read-only). */
export const gitSourceViewSchema = z
  .object({
    managedBy: z.string(),
    repo: z.string().nullable().optional(),
    file: z.string().nullable().optional(),
    commit: z.string().nullable().optional(),
    author: z.string().nullable().optional(),
  })
  .register(apiAnswers, { id: 'GitSourceView' });
export type GitSourceView = z.infer<typeof gitSourceViewSchema>;

/** An expansion the deletion guard holds (the appset is `Held`), as stored on the appset. */
export const pendingExpansionViewSchema = z
  .object({
    inputsHash: z
      .string()
      .describe('hash of the computed target set; confirming names it, so what is applied is what was shown'),
    heldAt: z.string(),
    currentCount: z.number().int(),
    targetCount: z.number().int(),
    delete: z.array(z.string()),
    create: z.array(z.string()),
    update: z.array(z.string()),
    move: z.array(z.string()).describe('targets that would move to another cluster'),
    deletePercent: z.number(),
    limit: z.number(),
    baseline: z.number().describe('the count the shrink was judged against'),
  })
  .register(apiAnswers, { id: 'PendingExpansionView' });
export type PendingExpansionView = z.infer<typeof pendingExpansionViewSchema>;

/** One ApplicationSet (`GET /api/v1/appsets`, `GET /api/v1/appsets/:name`). */
export const appSetViewSchema = z
  .object({
    id: z.string(),
    name: z.string(),
    apiVersion: z.string(),
    status: z
      .string()
      .describe('Ready, Error or Held (the deletion guard holds an expansion: see pendingExpansion)'),
    error: z
      .unknown()
      .describe("the last expansion's error (`{code, message, path}`), null when it expanded"),
    pendingExpansion: pendingExpansionViewSchema.nullable(),
    repoUrls: z.array(z.string()),
    project: z.string(),
    source: gitSourceViewSchema,
    targetCount: z.number().int(),
    lastExpandedAt: z.string().nullable(),
    createdAt: z.string(),
    updatedAt: z.string(),
    document: z.unknown().describe('the stored document (its spec)'),
    fleetErrors: z
      .array(z.unknown())
      .optional()
      .describe(
        "only from `GET /api/v1/appsets/:name`: a fleet repository's refused commit's errors naming it",
      ),
  })
  .register(apiAnswers, { id: 'AppSetView' });
export type AppSetView = z.infer<typeof appSetViewSchema>;

/** What the deletion guard says about one expansion: would it be held, and why. */
export const guardVerdictViewSchema = z
  .object({
    wouldHold: z.boolean(),
    deletePercent: z
      .number()
      .describe(
        'the larger of the share of current targets deleted and the share of the baseline gone after (0–100)',
      ),
    limit: z.number().describe('the largest share that goes through without confirmation'),
    baseline: z.number(),
  })
  .register(apiAnswers, { id: 'GuardVerdictView' });
export type GuardVerdictView = z.infer<typeof guardVerdictViewSchema>;

/**
 * The generators' output now (`GET /api/v1/appsets/:name/preview`, `POST /api/v1/appsets/preview`):
 * every target they make with what it resolves to, what an expansion would change, and the guard.
 */
export const expansionPreviewViewSchema = z
  .object({
    inputsHash: z.string(),
    targets: z.array(
      z.object({
        name: z.string(),
        cluster: z.string(),
        namespace: z.string(),
        repoUrl: z.string(),
        path: z.string(),
        targetRevision: z.string(),
        desiredRevision: z.string(),
        sources: z.array(targetSourceViewSchema).nullable(),
        bundleDigest: z.string(),
      }),
    ),
    create: z.array(z.string()),
    update: z.array(z.string()),
    move: z.array(z.string()),
    delete: z.array(z.string()),
    guard: guardVerdictViewSchema,
  })
  .register(apiAnswers, { id: 'ExpansionPreviewView' });
export type ExpansionPreviewView = z.infer<typeof expansionPreviewViewSchema>;

/** What a refresh asked for: the expansion, and with `hard` a fetch of each repository listed. */
export const appSetRefreshViewSchema = z
  .object({
    appSet: z.string(),
    hard: z.boolean(),
    requestedAt: z.string(),
    repositories: z.array(z.object({ id: z.string(), url: z.string() })),
  })
  .register(apiAnswers, { id: 'AppSetRefreshView' });
export type AppSetRefreshView = z.infer<typeof appSetRefreshViewSchema>;

/** Who a rollout released when, and who failed or was skipped, and why (by target name). */
export interface RolloutProgressView {
  released: Record<string, string>;
  failed: Record<string, string>;
  skipped: Record<string, string>;
}

/** One rollout (`GET /api/v1/rollouts`, and the answer to pause, resume and promote). */
export interface RolloutView {
  appSet: string;
  revision: string;
  /** Progressing, Paused, Halted, Completed or Superseded. */
  status: string;
  /** The current step's name (null once past the last). */
  step: string | null;
  stepIndex: number;
  steps: string[];
  /** Why it waits, in words. */
  message: string;
  stepStartedAt: string;
  bakeStartedAt: string | null;
  progress: RolloutProgressView;
  createdAt: string;
  finishedAt: string | null;
}

/**
 * `GET /api/v1/rollouts/:appSet`: the rollout and every target's place in it, or with `limit` or
 * `cursor` one page of its targets in name order.
 */
export interface RolloutDetailView extends RolloutView {
  /** Every target of the appset, not only those on this page. */
  targetCount: number;
  /** Pass back as `cursor` for the next page of targets; null on the last page, and when unpaged. */
  nextCursor: string | null;
  targets: {
    name: string;
    cluster: string;
    desiredRevision: string;
    releasedRevision: string | null;
    lastSyncedRevision: string | null;
    health: string;
    pinnedAt: string | null;
    releasedAt: string | null;
    failed: string | null;
    skipped: string | null;
  }[];
}
