import { createHealthAssessor } from '@flotilla/health';
import { diffObjects } from '@flotilla/diff';
import { type DriftDiffer } from './drift/drift-differ.js';
import { type HealthAssessor } from './health/target-health.js';
import { type WindowEvaluator } from './windows/sync-gate.js';

/** Drift is decided by `@flotilla/diff`: normalised, ignore rules and managedFields applied. */
export const defaultDiffer: DriftDiffer = (desired, live, options) => diffObjects(desired, live, options);

/** Built-in health rules of `@flotilla/health` (Lua customisations are a hub-side concern for now). */
export async function defaultHealthAssessor(): Promise<HealthAssessor> {
  return createHealthAssessor();
}

/** Until `@flotilla/windows` lands, windows cannot be evaluated and never block. */
export const defaultWindowEvaluator: WindowEvaluator = () => ({ canSync: true, nextChange: null });
