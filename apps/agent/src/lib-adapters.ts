import { diffObjects } from '@flotilla/diff';
import { evaluateWindows } from '@flotilla/windows';
import { type DriftDiffer } from './drift/drift-differ.js';
import { type HealthRule } from '@flotilla/contract';
import { RuledHealthAssessor } from './health/health-rules.js';
import { type WindowEvaluator } from './windows/sync-gate.js';

/** Drift is decided by `@flotilla/diff`: normalised, ignore rules and managedFields applied. */
export const defaultDiffer: DriftDiffer = (desired, live, options) => diffObjects(desired, live, options);

/** `@flotilla/health`'s built-in rules, and the custom Lua rules given (the hub sends them). */
export function defaultHealthAssessor(rules: readonly HealthRule[] = []): Promise<RuledHealthAssessor> {
  return RuledHealthAssessor.create(rules);
}

/** Sync windows as `@flotilla/windows` reads them (cron in its own time zone, deny wins). */
export const defaultWindowEvaluator: WindowEvaluator = (windows, subject, at, options) =>
  evaluateWindows(windows, subject, at, options);
