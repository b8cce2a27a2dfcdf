import { type IgnoreRule, type KubeObject } from '@flotilla/contract';
import { diffObjects } from '@flotilla/diff';

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
