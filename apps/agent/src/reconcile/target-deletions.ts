import { randomUUID } from 'node:crypto';
import { type Bundle, type Report, type TargetDeletion } from '@flotilla/contract';
import { type Logger } from 'pino';
import { type HealthAssessor } from '../health/target-health.js';
import { type KubeClient } from '../kube/kube-client.js';
import { BundleDecryptError, type BundleDecryptor } from '../secrets/bundle-decryptor.js';
import { type StateStore } from '../state/state-store.js';
import { deleteTarget } from '../sync/delete-target.js';

export interface TargetDeletionsDeps {
  kube: KubeClient;
  store: StateStore;
  decryptor: BundleDecryptor;
  health: HealthAssessor;
  emit: (reports: Report[]) => Promise<void>;
  log: Logger;
  now: () => Date;
  syncWait: { timeoutMs: number; pollMs: number };
  /** Aborted when the agent stops: a deletion stops half-way and resumes at the next start. */
  signal: AbortSignal;
}

/**
 * Tombstones — the hub's explicit, audited requests to delete a target from the cluster — carried
 * out once each, beside the pull loop (one may wait for minutes).
 */
export class TargetDeletions {
  /** Deletions under way, by tombstone id. */
  private readonly running = new Map<string, Promise<void>>();

  constructor(private readonly deps: TargetDeletionsDeps) {}

  /**
   * Each tombstone's target is stopped (`stopTarget`) and deleted once. A tombstone the hub no longer
   * sends (done, failed, or withdrawn) is forgotten; nothing else is ever deleted here.
   */
  async carryOut(
    deletions: readonly TargetDeletion[],
    bundles: ReadonlyMap<string, Bundle>,
    stopTarget: (targetId: string) => Promise<void>,
  ): Promise<void> {
    const { store, log } = this.deps;
    for (const d of deletions) {
      await stopTarget(d.targetId);
      const bundle = bundles.get(d.bundleDigest);
      if (!bundle || this.running.has(d.id)) continue;
      const task = this.run(d, bundle)
        .catch((err: unknown) => {
          log.error({ target: d.name, deletionId: d.id, err: (err as Error).message }, 'deletion failed');
        })
        .finally(() => this.running.delete(d.id));
      this.running.set(d.id, task);
    }
    const wanted = new Set(deletions.map((d) => d.id));
    for (const id of await store.listDeletionIds())
      if (!wanted.has(id) && !this.running.has(id)) await store.forgetDeletion(id);
  }

  /** Waits for the deletions under way (they stop early once the agent's signal aborts). */
  async stop(): Promise<void> {
    await Promise.all(this.running.values());
  }

  /**
   * Carries out one tombstone: the target's reconciler is already stopped. Its report goes out once
   * it ends (not when the agent stopped it half-way: the next start resumes it from its progress).
   */
  private async run(d: TargetDeletion, bundle: Bundle): Promise<void> {
    const { kube, store, decryptor, health, emit, log, now, syncWait, signal } = this.deps;
    const progress = await store.loadDeletionProgress(d.id);
    if (progress.finished) return;
    const state = await store.loadTargetState(d.targetId);
    let manifests: Bundle['manifests'];
    try {
      manifests = (await decryptor.plaintext(bundle)).manifests;
    } catch (err) {
      if (!(err instanceof BundleDecryptError)) throw err;
      // Its hooks could not run as written: nothing is touched, and the hub hears why.
      await emit([undecryptableReport(d, err, now().toISOString())]);
      await store.saveDeletionProgress({ ...progress, finished: true });
      return;
    }
    log.info({ target: d.name, deletionId: d.id }, 'deleting the target from the cluster');
    const result = await deleteTarget({
      // As the syncs that made the objects wrote: the tombstone names no project.
      kube: state.writesAs !== undefined && kube.impersonating ? kube.impersonating(state.writesAs) : kube,
      deletion: d,
      manifests,
      inventory: state.inventory,
      health,
      progress,
      saveProgress: (p) => store.saveDeletionProgress(p),
      waitTimeoutMs: syncWait.timeoutMs,
      pollMs: syncWait.pollMs,
      signal,
      now,
    });
    await store.saveTargetState(d.targetId, { ...state, inventory: result.inventory });
    if (result.interrupted) return;
    // Queued on disk before it is marked finished: a crash in between runs it again (every step it
    // finished is skipped or finds nothing left), never leaves the hub waiting for a lost report.
    await emit([result.report]);
    await store.saveDeletionProgress({ ...progress, finished: true });
    log.info({ target: d.name, deletionId: d.id, outcome: result.report.outcome }, result.report.message);
  }
}

function undecryptableReport(d: TargetDeletion, err: BundleDecryptError, at: string): Report {
  return {
    type: 'deletion',
    id: randomUUID(),
    targetId: d.targetId,
    deletionId: d.id,
    at,
    outcome: 'Failed',
    startedAt: at,
    finishedAt: at,
    message: `cannot decrypt the bundle ${d.bundleDigest}: ${err.message}; nothing deleted`,
    resources: [],
  };
}
