import type { ObjectComparison } from './agent-protocol.js';
import type { HealthStatus, SyncStatus } from './status.js';
import type { TargetReason } from './target-reason.js';

/**
 * Targets, their sync history and the syncs people ask for, as the hub's people API returns them
 * (`/api/v1/targets`, `/api/v1/sync-runs`, `/api/v1/targets/:name/operations`); the CLI and the
 * console read them.
 */

/** One target as `GET /api/v1/targets` lists it. */
export interface TargetListItemView {
  id: string;
  name: string;
  cluster: string;
  appSet: string;
  namespace: string;
  repoUrl: string;
  path: string;
  /** One source: what it asks for. Several (`spec.sources`): each one's, joined by commas. */
  targetRevision: string;
  /** The commit (or chart version) rendered; several sources: each one's, in order, joined by commas. */
  desiredRevision: string;
  /** A multi-source target's sources, each with what it resolved to; null for a single source. */
  sources: TargetSourceView[] | null;
  bundleDigest: string | null;
  /** What the agent is given: the release (a rollout may hold it back), or a pin that overrides it. */
  releasedRevision: string | null;
  pin: { revision: string; reason: string; actor: string; expiresAt: string | null } | null;
  syncPolicy: unknown;
  syncStatus: SyncStatus;
  health: HealthStatus;
  healthMessage: string | null;
  lastSyncedRevision: string | null;
  lastSyncedAt: string | null;
  lastReportAt: string | null;
  /** The one current reason it is not Synced and Healthy at the wanted revision (null: it is). */
  reason: TargetReason | null;
  /**
   * Set while its cluster's agent is offline (not seen within CLUSTER_OFFLINE_SECONDS): syncStatus
   * and health are what that agent last reported, not what runs now. `lastSeenAt` null: never seen.
   */
  stale: { lastSeenAt: string | null } | null;
}

/** One source of a multi-source target and the revision it resolved to. */
export interface TargetSourceView {
  repoUrl: string;
  /** A directory of a Git repository (`.` = its root); absent for a chart or a `ref:`-only source. */
  path?: string;
  /** A chart from a Helm repository. */
  chart?: string;
  /** The name `$ref/…` value files use for it. */
  ref?: string;
  /** What the source asks for: a branch, tag, commit or a chart's version range. */
  targetRevision: string;
  /** The commit, or the chart version, it resolved to. */
  revision: string;
}

/** One sync run of the history (`GET /api/v1/sync-runs`). */
export interface SyncRunView {
  id: string;
  target: string;
  cluster: string;
  appSet: string;
  revision: string;
  bundleDigest: string;
  trigger: string;
  outcome: string;
  message: string;
  startedAt: string;
  finishedAt: string;
  /** Per object: what the run did (`{kind, name, namespace, action, message}`), as the agent reported it. */
  resources: unknown;
  reportId: string;
  /** Only on a dry run: its resources say what a sync would have done; nothing was changed. */
  dryRun?: boolean;
  /** Only on a run a person asked for: the id of the requested sync it carried out. */
  operationId?: string;
}

export interface SyncRunPageView {
  items: SyncRunView[];
  nextCursor: string | null;
}

/** A sync a person asked for (`POST /api/v1/targets/:name/sync`, `GET …/operations`). */
export interface TargetOperationView {
  id: string;
  target: string;
  kind: string;
  prune: boolean;
  /** Asked what the sync would do, changing nothing (the answer is the run marked dryRun). */
  dryRun: boolean;
  /** Force=true for this run (Argo CD's `--force`). */
  force: boolean;
  /** Sync options for this run only (`Key=Value`). */
  syncOptions: string[];
  /** The revision asked for (always the one the target was assigned); null when none was named. */
  revision: string | null;
  /** A selective sync: only these objects; empty for the whole target. */
  resources: { group: string; kind: string; namespace?: string; name: string }[];
  /** Set when it was asked with others (an appset or a cluster selection) in one request. */
  batchId: string | null;
  requestedBy: string;
  reason: string;
  /** Pending, Succeeded, Failed, Partial, Blocked, Terminated, Expired or Cancelled. */
  state: string;
  message: string;
  createdAt: string;
  expiresAt: string;
  finishedAt: string | null;
  /** Set once a person asked to stop it; the agent's report then closes it (Terminated, or as it ended). */
  terminate: { requestedBy: string; reason: string; requestedAt: string } | null;
}

/** The answer to a sync of many targets: one operation per target asked, and those left out and why. */
export interface BulkSyncView {
  /** Shared by the batch's operations and audit events; null for a preview. */
  batchId: string | null;
  /** True when nothing was asked: `targets` are the ones that would be. */
  preview: boolean;
  targets: string[];
  operations: TargetOperationView[];
  skipped: { target: string; reason: string }[];
}

/**
 * `GET /api/v1/targets/:name/diff`: what a sync would change on the target's cluster, from its
 * agent's latest comparison. `comparison` is null until the agent compared anything; `current`
 * says whether it compared the revision and bundle the target wants now (an older one describes a
 * state Git has moved on from).
 */
export interface TargetDiffView {
  target: string;
  cluster: string;
  desiredRevision: string;
  bundleDigest: string | null;
  syncStatus: SyncStatus;
  comparison: {
    observedAt: string;
    revision: string;
    bundleDigest: string;
    current: boolean;
    inSync: boolean;
    compared: number;
    truncated: boolean;
    objects: ObjectComparison[];
  } | null;
}

/** A target's deletion with its objects (`POST /api/v1/targets/:name/delete`). */
export interface TargetDeletionView {
  target: string;
  deletionId: string;
  /**
   * Pending: its agent deletes the objects and reports; Failed: it could not (message says why; ask
   * again); Deleted: gone (at once when no agent was ever given anything of it).
   */
  state: 'Pending' | 'Failed' | 'Deleted';
  requestedBy: string;
  reason: string;
  requestedAt: string;
  message: string;
}
