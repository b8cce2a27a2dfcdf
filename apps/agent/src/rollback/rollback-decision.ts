import { z } from 'zod';
import type { HealthStatus } from '@flotilla/contract';

const bundleRefSchema = z.object({ revision: z.string(), digest: z.string() });
export type BundleRef = z.infer<typeof bundleRefSchema>;

/** What the agent remembers per target to roll back on its own; kept on disk across restarts. */
export const rollbackMemorySchema = z.object({
  /** The last bundle seen synced and Healthy here: what a rollback restores. */
  healthy: bundleRefSchema.nullable().default(null),
  /**
   * The bundle applied last, and when: the progress deadline counts from then. `synced` says a sync
   * of it succeeded: a Failed or Partial one changed the cluster (its deadline runs) but never makes
   * it a bundle to restore, however healthy the target looks afterwards. Older files lack it: such a
   * bundle waits for its next successful sync.
   */
  applied: bundleRefSchema
    .extend({ at: z.string(), synced: z.boolean().default(false) })
    .nullable()
    .default(null),
  /** Bundles this agent rolled back from; not applied again while the hub still assigns them. */
  failed: z.array(bundleRefSchema.extend({ at: z.string(), reason: z.string() })).default([]),
});
export type RollbackMemory = z.infer<typeof rollbackMemorySchema>;

export function emptyMemory(): RollbackMemory {
  return { healthy: null, applied: null, failed: [] };
}

/**
 * Statuses that count as "the new revision did not work" once its deadline has passed. Progressing
 * is included on purpose: a Deployment that never becomes ready reads Progressing until its own
 * progressDeadlineSeconds (10 min by default), and the rollout's deadline is the one that decides.
 */
const FAILING: readonly HealthStatus[] = ['Degraded', 'Progressing', 'Missing'];

/**
 * A full sync of `ref` finished (`synced`: it succeeded): the deadline starts now, unless it is the
 * same bundle, which keeps its start and becomes synced once one of its syncs succeeds.
 */
export function recordApplied(
  memory: RollbackMemory,
  ref: BundleRef,
  at: Date,
  synced: boolean,
): RollbackMemory {
  const applied = memory.applied;
  if (applied?.digest === ref.digest && applied.revision === ref.revision) {
    return !synced || applied.synced ? memory : { ...memory, applied: { ...applied, synced: true } };
  }
  return { ...memory, applied: { ...ref, at: at.toISOString(), synced } };
}

export type HealthVerdict =
  | { action: 'none'; memory: RollbackMemory; recheckAt?: Date }
  | { action: 'rollback'; memory: RollbackMemory; from: BundleRef; to: BundleRef; reason: string };

/**
 * Judges the target's health against the bundle applied last. Healthy: that bundle becomes the one
 * to restore later. Failing past `deadlineSeconds` after it was applied, with an earlier healthy
 * bundle at hand: roll back to it. Otherwise keep watching (`recheckAt` says when the deadline ends).
 */
export function judgeHealth(
  memory: RollbackMemory,
  status: HealthStatus,
  deadlineSeconds: number | undefined,
  now: Date,
): HealthVerdict {
  const applied = memory.applied;
  if (!applied) return { action: 'none', memory };
  const ref = { revision: applied.revision, digest: applied.digest };
  if (status === 'Healthy') {
    // A revision that never synced completely is not one to come back to.
    if (!applied.synced) return { action: 'none', memory };
    const same = memory.healthy?.digest === ref.digest && memory.healthy.revision === ref.revision;
    return { action: 'none', memory: same ? memory : { ...memory, healthy: ref } };
  }
  const healthy = memory.healthy;
  if (deadlineSeconds === undefined || !healthy || healthy.digest === ref.digest)
    return { action: 'none', memory };
  if (!FAILING.includes(status)) return { action: 'none', memory };
  const deadline = new Date(Date.parse(applied.at) + deadlineSeconds * 1000);
  if (now < deadline) return { action: 'none', memory, recheckAt: deadline };
  const reason = `${status} ${deadlineSeconds} s after revision ${ref.revision.slice(0, 12)} was applied`;
  return {
    action: 'rollback',
    from: ref,
    to: healthy,
    reason,
    memory: {
      ...memory,
      failed: [
        ...memory.failed.filter((f) => f.digest !== ref.digest),
        { ...ref, at: now.toISOString(), reason },
      ],
    },
  };
}

/** The failed bundle this assignment names, if the agent rolled back from it. */
export function failedEntry(
  memory: RollbackMemory,
  assigned: BundleRef,
): RollbackMemory['failed'][number] | undefined {
  return memory.failed.find((f) => f.digest === assigned.digest && f.revision === assigned.revision);
}

/**
 * The hub moved on (a pin to the healthy bundle, or a new commit): forget failures it no longer
 * asks for, so that a later, deliberate re-assignment of the same revision is applied again.
 */
export function forgetOtherFailures(memory: RollbackMemory, assigned: BundleRef): RollbackMemory {
  const kept = memory.failed.filter((f) => f.digest === assigned.digest && f.revision === assigned.revision);
  return kept.length === memory.failed.length ? memory : { ...memory, failed: kept };
}
