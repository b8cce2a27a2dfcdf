export {
  evaluateWindows,
  nextOpen,
  HORIZON_MS,
  type WindowEvaluation,
  type EvaluateOptions,
} from './evaluate-windows.js';
export { validateWindows } from './validate-windows.js';
export { windowMatches, type WindowTarget } from './window-selector.js';
export { WindowError, type WindowErrorCode } from './window-error.js';
export { parseGoDuration } from './go-duration.js';
export { globMatch } from './glob-match.js';
export {
  windowsForTarget,
  targetWindowStatus,
  type NamedSyncWindow,
  type TargetWindowStatus,
} from './target-windows.js';
export { windowIntervals, type WindowInterval } from './window-intervals.js';
