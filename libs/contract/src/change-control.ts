import type { ObjectRef } from './kube-object.js';
import type { SyncWindow } from './sync-window.js';

/**
 * Sync windows and break-glass overrides as the hub's people API returns them
 * (`/api/v1/windows`, `/api/v1/targets/:name/windows`, `/api/v1/break-glass`). The hub writes them
 * and the CLI reads them, so both use these definitions.
 */

/** A named, versioned sync window: the window's own fields plus its name and bookkeeping. */
export interface SyncWindowView extends SyncWindow {
  name: string;
  /**
   * The projects whose targets the window governs (an AppProject's windows in Argo CD); empty means
   * every project. The selectors above pick among those targets.
   */
  projects: string[];
  version: number;
  description: string;
  createdAt: string;
  updatedAt: string;
}

/** One immutable version of a window: what it said, who changed it, when and why. */
export interface SyncWindowVersionView {
  version: number;
  change: 'created' | 'updated' | 'deleted';
  window: SyncWindow;
  projects: string[];
  description: string;
  actor: string;
  reason: string;
  at: string;
}

/** `GET /api/v1/windows/:name/calendar`: when the window is active in a range, for a calendar. */
export interface SyncWindowCalendarView {
  window: string;
  kind: 'allow' | 'deny';
  /** The zone its schedule is read in; a client draws the intervals in it and in the viewer's. */
  timeZone: string;
  from: string;
  to: string;
  /** Active strictly between start and end (ISO instants), clipped to the range. */
  intervals: { start: string; end: string }[];
}

/** What the windows mean for one target now. */
export interface TargetWindowsView {
  target: string;
  cluster: string;
  at: string;
  /** The windows that apply to the target, each with whether it is active now. */
  windows: {
    name: string;
    kind: 'allow' | 'deny';
    schedule: string;
    duration: string;
    timeZone: string;
    active: boolean;
  }[];
  /** May an automatic sync or self-heal run now? */
  canSync: boolean;
  /** May a person's manual sync run now (`manualSync` windows let it through)? */
  canSyncManually: boolean;
  /** When automatic syncs are next allowed (now when they are); null if not within a year. */
  nextOpen: string | null;
  /**
   * The windows holding automatic syncs now, by name: the active deny windows, else the allow
   * windows it waits for. Empty when it may sync. With `nextOpen` null they are always in force and
   * end only when changed or deleted.
   */
  heldBy: string[];
  /** When automatic syncs next stop being allowed; null when blocked now or nothing closes. */
  nextClose: string | null;
  /** Active break-glass overrides covering the target. */
  breakGlass: BreakGlassOverrideView[];
  /**
   * The change a window holds back: the agent's last run is Blocked — a sync of a revision the
   * target has not synced since, or a self-heal. `eligibleAt` is when the windows let it through (now under a break-glass
   * that allows syncing outside windows), null when nothing opens within a year.
   */
  pending: {
    revision: string;
    trigger: string;
    since: string;
    message: string;
    eligibleAt: string | null;
  } | null;
}

/** An override as it travels to agents (the assignment's `breakGlass` entries). */
export interface BreakGlassOverrideView {
  id: string;
  reason: string;
  expiresAt: string;
  allowSyncOutsideWindows: boolean;
  pauseSelfHeal: boolean;
}

export const BREAK_GLASS_SCOPES = ['cluster', 'appset', 'target'] as const;
export type BreakGlassScope = (typeof BREAK_GLASS_SCOPES)[number];
export type BreakGlassState = 'active' | 'closed' | 'expired';

export interface BreakGlassView {
  id: number;
  scope: BreakGlassScope;
  /** The cluster's, appset's or target's name. */
  name: string;
  reason: string;
  allowSyncOutsideWindows: boolean;
  pauseSelfHeal: boolean;
  state: BreakGlassState;
  openedBy: string;
  openedAt: string;
  expiresAt: string;
  closedAt: string | null;
  closedBy: string | null;
  closeReason: string | null;
  /** How many manual changes agents reported under it. */
  manualChanges: number;
}

/** One drift an agent saw while the override was in force: "manual change under break-glass #N". */
export interface ManualChangeView {
  summary: string;
  target: string;
  cluster: string;
  resource: ObjectRef;
  paths: string[];
  /** The field manager that made the change, when the agent could tell. */
  manager: string | null;
  /** tolerated (self-heal paused) or healed (synced under the override). */
  state: string;
  at: string;
}

/** `GET /api/v1/break-glass/:id/record`: the post-incident record. */
export interface BreakGlassRecordView {
  breakGlass: BreakGlassView;
  changes: ManualChangeView[];
}
