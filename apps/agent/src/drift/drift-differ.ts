import { type IgnoreRule, type KubeObject } from '@flotilla/contract';

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
export type DriftDiffer = (
  desired: KubeObject,
  live: KubeObject,
  options: { ignoreRules: IgnoreRule[]; manager: string },
) => DriftResult;
