import { evaluateWindows } from '@flotilla/windows';
import { type HealthRule } from '@flotilla/contract';
import { RuledHealthAssessor } from './health/health-rules.js';
import { type WindowEvaluator } from './windows/sync-gate.js';

/** Drift is decided by `@flotilla/diff` (it lives with the seam it fills, where syncs use it too). */
export { defaultDiffer } from './drift/drift-differ.js';

/** `@flotilla/health`'s built-in rules, and the custom Lua rules given (the hub sends them). */
export function defaultHealthAssessor(rules: readonly HealthRule[] = []): Promise<RuledHealthAssessor> {
  return RuledHealthAssessor.create(rules);
}

/** Sync windows as `@flotilla/windows` reads them (cron in its own time zone, deny wins). */
export const defaultWindowEvaluator: WindowEvaluator = (windows, subject, at, options) =>
  evaluateWindows(windows, subject, at, options);
