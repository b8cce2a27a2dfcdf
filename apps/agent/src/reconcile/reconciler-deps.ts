import { type Assignment, type KubeObject, type Report } from '@flotilla/contract';
import { type Logger } from 'pino';
import { type DriftDiffer } from '../drift/drift-differ.js';
import { type ClusterEvent } from '../events/cluster-events.js';
import { type HealthAssessor } from '../health/target-health.js';
import { type KubeClient } from '../kube/kube-client.js';
import { type RollbackHook } from '../rollback/auto-rollback.js';
import { type StateStore } from '../state/state-store.js';
import { type GateAction, type GateDecision } from '../windows/sync-gate.js';

/** The live view the reconciler reads: the watch cache, kept fresh by informers. */
export interface LiveView {
  ensure(apiVersion: string, kind: string): Promise<void>;
  cached(apiVersion: string, kind: string, name: string, namespace?: string): KubeObject | undefined;
  isWatching(apiVersion: string, kind: string): boolean;
}

export interface ReconcilerDeps {
  kube: KubeClient;
  live: LiveView;
  store: StateStore;
  differ: DriftDiffer;
  health: HealthAssessor;
  gate: (assignment: Assignment, action: GateAction, at: Date) => GateDecision;
  emit: (reports: Report[]) => Promise<void>;
  log: Logger;
  now: () => Date;
  /** Delay between consecutive self-heals of one target: initial, doubling, capped. */
  healBackoff: { initialMs: number; maxMs: number };
  /** How long a sync waits for one wave to be healthy (or a hook to finish), and how often it looks. */
  syncWait?: { timeoutMs: number; pollMs: number };
  /** Automatic rollback (apps/agent/src/rollback); absent: never roll back on its own. */
  rollback?: RollbackHook;
  /** Kubernetes Events about what the reports say was done (events/); absent: none are written. */
  recordEvents?: (events: ClusterEvent[]) => void;
  /**
   * The user a target's syncs write as (its project's ServiceAccount, impersonated); absent: the
   * agent itself. Watches, drift reads and Events stay the agent's own.
   */
  writeAs?: (assignment: Assignment) => string;
}
