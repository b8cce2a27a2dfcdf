import { createHealthAssessor } from '@flotilla/health';
import { diffObjects } from '@flotilla/diff';
import { evaluateWindows } from '@flotilla/windows';
import { type DriftDiffer } from './drift/drift-differ.js';
import { type HealthAssessor } from './health/target-health.js';
import { type WindowEvaluator } from './windows/sync-gate.js';

/** Drift is decided by `@flotilla/diff`: normalised, ignore rules and managedFields applied. */
export const defaultDiffer: DriftDiffer = (desired, live, options) => diffObjects(desired, live, options);

/** Built-in health rules of `@flotilla/health` (Lua customisations are a hub-side concern for now). */
export async function defaultHealthAssessor(): Promise<HealthAssessor> {
  return createHealthAssessor();
}

/** Sync windows as `@flotilla/windows` reads them (cron in its own time zone, deny wins). */
export const defaultWindowEvaluator: WindowEvaluator = (windows, subject, at, options) =>
  evaluateWindows(windows, subject, at, options);
