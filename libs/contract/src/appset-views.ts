import type { TargetSourceView } from './target-views.js';

/**
 * ApplicationSets and their rollouts as the hub's people API returns them (`/api/v1/appsets`,
 * `/api/v1/rollouts`); the CLI and the console read them.
 */

/** Where an object came from: the API, or a fleet repository's file at a commit (then read-only). */
export interface GitSourceView {
  managedBy: string;
  repo?: string | null;
  file?: string | null;
  commit?: string | null;
  author?: string | null;
}

/** An expansion the deletion guard holds (the appset is `Held`), as stored on the appset. */
export interface PendingExpansionView {
  /** Hash of the computed target set; confirming names it, so what is applied is what was shown. */
  inputsHash: string;
  heldAt: string;
  currentCount: number;
  targetCount: number;
  delete: string[];
  create: string[];
  update: string[];
  /** Targets that would move to another cluster (a new target there, the old one removed). */
  move: string[];
  deletePercent: number;
  limit: number;
  /** The count the shrink was judged against. */
  baseline: number;
}

/** One ApplicationSet (`GET /api/v1/appsets`, `GET /api/v1/appsets/:name`). */
export interface AppSetView {
  id: string;
  name: string;
  apiVersion: string;
  /** Ready, Error or Held (the deletion guard holds an expansion: see pendingExpansion). */
  status: string;
  /** The last expansion's error (`{code, message, path}`), null when it expanded. */
  error: unknown;
  pendingExpansion: PendingExpansionView | null;
  repoUrls: string[];
  project: string;
  source: GitSourceView;
  targetCount: number;
  lastExpandedAt: string | null;
  createdAt: string;
  updatedAt: string;
  /** The stored document (its spec). */
  document: unknown;
  /** Only from `GET /api/v1/appsets/:name`: a fleet repository's refused commit's errors naming it. */
  fleetErrors?: unknown[];
}

/** What the deletion guard says about one expansion: would it be held, and why. */
export interface GuardVerdictView {
  wouldHold: boolean;
  /** The larger of the share of current targets deleted and the share of the baseline gone after (0–100). */
  deletePercent: number;
  /** The largest share that goes through without confirmation. */
  limit: number;
  baseline: number;
}

/**
 * The generators' output now (`GET /api/v1/appsets/:name/preview`, `POST /api/v1/appsets/preview`):
 * every target they make with what it resolves to, what an expansion would change, and the guard.
 */
export interface ExpansionPreviewView {
  inputsHash: string;
  targets: {
    name: string;
    cluster: string;
    namespace: string;
    repoUrl: string;
    path: string;
    targetRevision: string;
    desiredRevision: string;
    sources: TargetSourceView[] | null;
    bundleDigest: string;
  }[];
  create: string[];
  update: string[];
  move: string[];
  delete: string[];
  guard: GuardVerdictView;
}

/** What a refresh asked for: the expansion, and with `hard` a fetch of each repository listed. */
export interface AppSetRefreshView {
  appSet: string;
  hard: boolean;
  requestedAt: string;
  repositories: { id: string; url: string }[];
}

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
