import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import type { Assignment, Bundle, HealthStatus, SyncReport } from '@flotilla/contract';
import type { Logger } from 'pino';
import { readJsonFile, writeFileAtomic } from '../state/atomic-file.js';
import {
  emptyMemory,
  failedEntry,
  forgetOtherFailures,
  judgeHealth,
  recordApplied,
  rollbackMemorySchema,
  type RollbackMemory,
} from './rollback-decision.js';

/** What the reconciler must do to roll back: sync this (earlier) assignment and bundle, saying why. */
export interface RollbackOrder {
  assignment: Assignment;
  bundle: Bundle;
  rolledBackFrom: NonNullable<SyncReport['rolledBackFrom']>;
}

/** The reconciler's view of automatic rollback (see TargetReconciler). */
export interface RollbackHook {
  /** A full sync finished. */
  synced(assignment: Assignment, report: SyncReport): Promise<void>;
  /** Health as just judged: an order to roll back, and/or when to look again (the deadline). */
  judged(
    assignment: Assignment,
    status: HealthStatus,
    now: Date,
  ): Promise<{ order?: RollbackOrder; recheckAt?: Date }>;
}

/**
 * Automatic rollback, agent side. For every target it remembers (on disk, under `rollback/`) the
 * last bundle seen Healthy and the bundle applied last. When an assignment carries `autoRollback`
 * and the bundle applied last is still Degraded or Progressing its deadline after it was applied,
 * it restores the healthy bundle (bundles stay in the state dir) with a sync whose trigger is
 * `rollback`, and keeps it while the hub still assigns the failed one — the hub pins the target when
 * it hears of it.
 */
export class AutoRollback implements RollbackHook {
  private readonly memories = new Map<string, RollbackMemory>();

  constructor(
    private readonly dir: string,
    /** The bundle of that digest from the state dir, ready to apply (decrypted), or undefined. */
    private readonly loadBundle: (assignment: Assignment, digest: string) => Promise<Bundle | undefined>,
    private readonly log: Logger,
  ) {}

  async init(): Promise<void> {
    await mkdir(this.dir, { recursive: true, mode: 0o700 });
  }

  async synced(assignment: Assignment, report: SyncReport): Promise<void> {
    // A failed or partial sync still changed the cluster: its deadline runs too. Blocked changed nothing.
    if (report.outcome === 'Blocked') return;
    const memory = await this.memory(assignment.targetId);
    const next = recordApplied(
      memory,
      { revision: report.revision, digest: report.bundleDigest },
      new Date(report.finishedAt),
      report.outcome === 'Succeeded',
    );
    if (next !== memory) await this.save(assignment.targetId, next);
  }

  async judged(
    assignment: Assignment,
    status: HealthStatus,
    now: Date,
  ): Promise<{ order?: RollbackOrder; recheckAt?: Date }> {
    const memory = await this.memory(assignment.targetId);
    const verdict = judgeHealth(memory, status, assignment.autoRollback?.progressDeadlineSeconds, now);
    if (verdict.action === 'none') {
      if (verdict.memory !== memory) await this.save(assignment.targetId, verdict.memory);
      return verdict.recheckAt ? { recheckAt: verdict.recheckAt } : {};
    }
    const bundle = await this.loadBundle(assignment, verdict.to.digest);
    if (!bundle) {
      this.log.error(
        { target: assignment.name, digest: verdict.to.digest },
        'cannot roll back: the last healthy bundle is no longer in the state dir',
      );
      return {};
    }
    await this.save(assignment.targetId, verdict.memory);
    this.log.warn(
      {
        target: assignment.name,
        from: verdict.from.revision,
        to: verdict.to.revision,
        reason: verdict.reason,
      },
      'rolling back to the last healthy revision',
    );
    return {
      order: {
        assignment: { ...assignment, revision: verdict.to.revision, bundleDigest: verdict.to.digest },
        bundle,
        rolledBackFrom: {
          revision: verdict.from.revision,
          bundleDigest: verdict.from.digest,
          reason: verdict.reason,
        },
      },
    };
  }

  /**
   * The assignment to run: the hub's, unless it names a bundle this agent rolled back from — then
   * the healthy bundle it restored, until the hub assigns something else.
   */
  async effective(
    assignment: Assignment,
    bundle: Bundle,
  ): Promise<{ assignment: Assignment; bundle: Bundle }> {
    const memory = await this.memory(assignment.targetId);
    if (memory.failed.length === 0) return { assignment, bundle };
    const assigned = { revision: assignment.revision, digest: assignment.bundleDigest };
    const failed = failedEntry(memory, assigned);
    const healthy = memory.healthy;
    if (!failed || !healthy) {
      const next = forgetOtherFailures(memory, assigned);
      if (next !== memory) await this.save(assignment.targetId, next);
      return { assignment, bundle };
    }
    const restored = await this.loadBundle(assignment, healthy.digest);
    if (!restored) return { assignment, bundle };
    return {
      assignment: { ...assignment, revision: healthy.revision, bundleDigest: healthy.digest },
      bundle: restored,
    };
  }

  private async memory(targetId: string): Promise<RollbackMemory> {
    const cached = this.memories.get(targetId);
    if (cached) return cached;
    let memory = emptyMemory();
    try {
      const parsed = rollbackMemorySchema.safeParse(await readJsonFile(this.path(targetId)));
      if (parsed.success) memory = parsed.data;
    } catch (err) {
      // A damaged file costs the memory of the last healthy bundle (no rollback until the next one), never a wrong apply.
      this.log.warn({ targetId, err: (err as Error).message }, 'ignoring unreadable rollback memory');
    }
    this.memories.set(targetId, memory);
    return memory;
  }

  private async save(targetId: string, memory: RollbackMemory): Promise<void> {
    this.memories.set(targetId, memory);
    await writeFileAtomic(this.path(targetId), JSON.stringify(memory, null, 2));
  }

  private path(targetId: string): string {
    return join(this.dir, `${encodeURIComponent(targetId)}.json`);
  }
}
