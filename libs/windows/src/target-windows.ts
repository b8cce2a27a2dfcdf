import { type SyncWindow } from '@flotilla/contract';
import { evaluateWindows, nextOpen } from './evaluate-windows.js';
import { windowMatches, type WindowTarget } from './window-selector.js';

/** A sync window as the hub stores it: a unique name and the window itself. */
export interface NamedSyncWindow {
  name: string;
  window: SyncWindow;
  /** Only targets of these projects; empty or absent means every project. */
  projects?: readonly string[];
}

/**
 * The named windows whose selectors pick this target, in name order, so that the same windows
 * always give the same list (and the same assignment ETag). Windows that pick nothing here are left
 * out: an agent only ever sees the windows that concern it.
 */
export function windowsForTarget(
  windows: readonly NamedSyncWindow[],
  target: WindowTarget,
): NamedSyncWindow[] {
  return windows
    .filter((w) => inProjects(w, target) && windowMatches(w.window, target))
    .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}

/** What the windows mean for one target at one time, for people ("pending, eligible at T"). */
export interface TargetWindowStatus {
  /** Names of the windows that apply to the target. */
  matching: string[];
  /** Names of those active at `at`. */
  active: string[];
  /** May an automatic sync (or self-heal) run now? */
  canSync: boolean;
  /** May a person's manual sync run now (`manualSync` windows let it through)? */
  canSyncManually: boolean;
  /** When automatic syncs are next allowed: `at` itself when they are now; null if not within the horizon. */
  nextOpen: Date | null;
  /** When automatic syncs next stop being allowed; null when blocked now or nothing closes within the horizon. */
  nextClose: Date | null;
}

/** Evaluates `windowsForTarget` at `at`. Throws a WindowError for an invalid window. */
export function targetWindowStatus(
  windows: readonly NamedSyncWindow[],
  target: WindowTarget,
  at: Date,
): TargetWindowStatus {
  const applying = windowsForTarget(windows, target);
  const specs = applying.map((w) => w.window);
  const auto = evaluateWindows(specs, target, at);
  const manual = evaluateWindows(specs, target, at, { manual: true });
  return {
    matching: applying.map((w) => w.name),
    active: auto.active.map((i) => (applying[i] as NamedSyncWindow).name),
    canSync: auto.canSync,
    canSyncManually: manual.canSync,
    nextOpen: nextOpen(specs, target, at),
    nextClose: auto.canSync ? auto.nextChange : null,
  };
}

/**
 * A window scoped to projects governs only their targets, whatever its selectors say, as a window of
 * an Argo CD AppProject governs only that project's applications. A target whose project is not
 * known is governed only by unscoped windows.
 */
function inProjects(w: NamedSyncWindow, target: WindowTarget): boolean {
  if (!w.projects || w.projects.length === 0) return true;
  return target.project !== undefined && w.projects.includes(target.project);
}
