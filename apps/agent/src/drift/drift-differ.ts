import { type Assignment, type IgnoreRule, type KubeObject } from '@flotilla/contract';
import { diffObjects } from '@flotilla/diff';
import { fieldManagerOf, validatesOf } from '../sync/apply-mode.js';

export interface DriftDifference {
  /** JSON Pointer into the object, e.g. `/spec/replicas`. */
  path: string;
  desired: unknown;
  live: unknown;
  /** Other field managers owning the live value here, from managedFields (when any). */
  liveManagers?: string[];
}

export interface DriftResult {
  inSync: boolean;
  differences: DriftDifference[];
}

/** The comparison the agent delegates to `@flotilla/diff` (normalised, ignore rules applied). */
export type DriftDiffer = (desired: KubeObject, live: KubeObject, options: DriftOptions) => DriftResult;

/** Drift is decided by `@flotilla/diff`: normalised, ignore rules and managedFields applied. */
export const defaultDiffer: DriftDiffer = (desired, live, options) => diffObjects(desired, live, options);

export interface DriftOptions {
  ignoreRules: IgnoreRule[];
  manager: string;
  /** Validate=false: fields the server dropped as undeclared by its schema are not drift. */
  unknownFieldsDropped?: boolean;
}

/** How one declared object of a target is compared with what runs, wherever the agent compares. */
export function driftOptionsOf(desired: KubeObject, assignment: Assignment): DriftOptions {
  return {
    ignoreRules: assignment.ignoreDifferences,
    // ServerSideApply=false: no Apply entry, so the last-applied annotation says what was dropped.
    manager: fieldManagerOf(desired, assignment.syncPolicy),
    unknownFieldsDropped: !validatesOf(desired, assignment.syncPolicy),
  };
}
