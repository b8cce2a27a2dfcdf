import {
  type Assignment,
  type Bundle,
  type HealthRule,
  type KubeObject,
  type TargetDeletion,
} from '@flotilla/contract';
import { type Logger } from 'pino';
import { type RuledHealthAssessor } from '../health/health-rules.js';
import { type AutoRollback } from '../rollback/auto-rollback.js';
import { type PlaintextBundles } from './plaintext-bundles.js';
import { type TargetDeletions } from './target-deletions.js';
import { type ReconcilerDeps } from './reconciler-deps.js';
import { TargetReconciler } from './target-reconciler.js';

export interface TargetSetDeps {
  reconciler: ReconcilerDeps;
  /** Which bundle a target runs: the assigned one, or the healthy one it was rolled back to. */
  rollback: AutoRollback;
  plaintext: PlaintextBundles;
  deletions: TargetDeletions;
  /** The hub-sent health rules in use; absent when a test judges health its own way. */
  ruled: RuledHealthAssessor | undefined;
  log: Logger;
}

/**
 * The targets this agent reconciles, one TargetReconciler each, kept in line with the assignments:
 * started, updated, stopped when no longer assigned (their objects left in place), and handed to
 * TargetDeletions when a tombstone names them.
 */
export class TargetSet {
  private readonly reconcilers = new Map<string, TargetReconciler>();

  constructor(private readonly deps: TargetSetDeps) {}

  get size(): number {
    return this.reconcilers.size;
  }

  /** An object the watches saw change: each target checks whether it is one of its own. */
  notify(obj: KubeObject): void {
    for (const r of this.reconcilers.values()) r.notify(obj);
  }

  /** The periodic full resync, with fresh reads: the safety net behind the watches. */
  resync(): void {
    for (const r of this.reconcilers.values()) r.resync();
  }

  /**
   * Judge with these health rules from now on; when they changed, every running target is judged
   * again (a target whose rule arrived after its sync is no longer counted by the old verdict).
   */
  async useHealthRules(rules: readonly HealthRule[]): Promise<void> {
    const { ruled, log } = this.deps;
    if (!ruled || !(await ruled.setRules(rules))) return;
    log.info({ rules: rules.map((r) => r.key) }, 'health rules updated');
    for (const r of this.reconcilers.values()) r.reassessHealth();
  }

  /** Bring the running reconcilers in line with an assignment set whose bundles are all at hand. */
  async apply(
    assignments: readonly Assignment[],
    bundles: ReadonlyMap<string, Bundle>,
    deletions: readonly TargetDeletion[] = [],
  ): Promise<void> {
    const { reconciler, rollback, plaintext, log } = this.deps;
    const seen = new Set<string>();
    // A target being deleted is never synced, whatever else the answer says.
    const doomed = new Set(deletions.map((d) => d.targetId));
    for (const a of assignments) {
      if (doomed.has(a.targetId)) continue;
      const stored = bundles.get(a.bundleDigest);
      if (!stored) continue;
      seen.add(a.targetId);
      // A bundle whose secrets cannot be decrypted leaves the target on its last good revision.
      const bundle = await plaintext.of(a, stored);
      if (!bundle) continue;
      // A revision this agent rolled back from stays replaced by the healthy one until the hub moves on.
      const run = await rollback.effective(a, bundle);
      const existing = this.reconcilers.get(a.targetId);
      if (existing) existing.update(run.assignment, run.bundle);
      else
        this.reconcilers.set(
          a.targetId,
          await TargetReconciler.start(reconciler, run.assignment, run.bundle),
        );
    }
    // A target the hub no longer assigns is left as it is in the cluster (orphaned), never deleted:
    // an empty answer from a confused hub must not wipe a cluster.
    for (const [id, r] of this.reconcilers) {
      if (!seen.has(id) && !assignments.some((a) => a.targetId === id)) {
        this.reconcilers.delete(id);
        await r.stop();
        log.info({ targetId: id }, 'target no longer assigned; its objects are left in place');
      }
    }
    // Only a tombstone — the hub's explicit, audited request — deletes anything.
    await this.deps.deletions.carryOut(deletions, bundles, (targetId) => this.stopTarget(targetId));
  }

  /** Stops every target's work (the step in progress finishes). */
  async stop(): Promise<void> {
    await Promise.all([...this.reconcilers.values()].map((r) => r.stop()));
  }

  /** Waits for the deletions under way (they stop early once the agent's signal aborts). */
  async waitForDeletions(): Promise<void> {
    await this.deps.deletions.stop();
  }

  private async stopTarget(targetId: string): Promise<void> {
    const running = this.reconcilers.get(targetId);
    if (!running) return;
    this.reconcilers.delete(targetId);
    await running.stop();
  }
}
