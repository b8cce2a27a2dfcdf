import { type Assignment, type KubeObject, type SyncReport, type SyncTrigger } from '@flotilla/contract';
import { type DriftDiffer } from '../drift/drift-differ.js';
import { type HealthAssessor } from '../health/target-health.js';
import { type KubeClient } from '../kube/kube-client.js';
import { type ResourceId } from '../state/state-store.js';

export interface SyncInput {
  kube: KubeClient;
  assignment: Assignment;
  manifests: readonly KubeObject[];
  /** What the target applied before (for prune), in apply order. */
  inventory: readonly ResourceId[];
  trigger: SyncTrigger;
  /** Judges when a wave is healthy and when a hook has finished. */
  health: HealthAssessor;
  /** Self-heal: re-apply only these object keys, prune nothing, run no hooks, wait for nothing. */
  only?: ReadonlySet<string>;
  breakGlassId?: string;
  now?: () => Date;
  /** How long one wave may take to become healthy, or one hook group to finish. Default 5 minutes. */
  waitTimeoutMs?: number;
  /** How often a wave's objects or a hook are read back while waiting. Default 500 ms. */
  pollMs?: number;
  /** Aborts any wait (the agent is stopping); the sync then fails with a message saying so. */
  signal?: AbortSignal;
  /**
   * A person asked to stop this run (its abort reason says who and why): it stops at the next safe
   * point — before the next object, hook or prune, or while waiting for a wave or a hook — and is
   * reported Terminated with what it applied. No later wave, prune, PostSync or SyncFail hook runs.
   */
  terminate?: AbortSignal;
  /** How ApplyOutOfSyncOnly judges an object in sync: the agent's drift comparison. */
  differ?: DriftDiffer;
}

export interface SyncResult {
  report: SyncReport;
  /** The objects as applied (prepared), in apply order. Hooks are not part of it. */
  desired: KubeObject[];
  /** The live objects the API returned from each successful apply, by key. */
  live: Map<string, KubeObject>;
  inventory: ResourceId[];
  /**
   * The agent stopped during the run (its signal aborted): the report says how far it got, but the
   * revision did not fail, so it is not recorded as synced and is run again after the restart.
   */
  interrupted?: boolean;
}

export const DEFAULT_WAIT_TIMEOUT_MS = 300_000;
export const DEFAULT_POLL_MS = 500;
