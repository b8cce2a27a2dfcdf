import { z } from 'zod';
import type { HealthStatus, SyncOutcome, SyncStatus } from './status.js';

/**
 * Why a target is not Synced and Healthy at the revision Git wants: one code from this fixed list,
 * most fundamental first (an offline agent explains everything after it). The order is the
 * precedence `targetReason` applies when several hold at once.
 */
export const TARGET_REASON_CODES = [
  'AgentOffline',
  'Deleting',
  'DeletionFailed',
  'GeneratorError',
  'DeletionGuardHeld',
  'ProjectDenied',
  'SourceUnverified',
  'Pinned',
  'WindowClosed',
  'WaitingForRolloutStep',
  'SyncFailed',
  'ManualSyncRequired',
  'Progressing',
  'Degraded',
] as const;
export const targetReasonCodeSchema = z.enum(TARGET_REASON_CODES);
export type TargetReasonCode = z.infer<typeof targetReasonCodeSchema>;

/** The short answer (`explain` is the long one): a code, a sentence, and the facts it names. */
export const targetReasonSchema = z.object({
  code: targetReasonCodeSchema,
  message: z.string(),
  /** AgentOffline: when the agent was last seen (null: never). */
  since: z.string().nullable().optional(),
  /** WindowClosed: the window that holds the target, and when syncs may run again (null: not within a year). */
  window: z.string().optional(),
  nextOpen: z.string().nullable().optional(),
});
export type TargetReason = z.infer<typeof targetReasonSchema>;

/** What is known about one target when its reason is chosen; absent facts do not hold. */
export interface TargetFacts {
  agentOffline?: { lastSeenAt: string | null };
  /** A person asked to delete it with its objects: its agent is deleting (Pending), or could not (Failed). */
  deletion?: { state: 'Pending' | 'Failed'; requestedBy: string; reason: string; message: string };
  generatorError?: { message: string };
  deletionGuardHeld?: { message: string };
  projectDenied?: { message: string };
  /** The revision Git wants is not signed as its repository requires: the commit and the signer found. */
  sourceUnverified?: { message: string };
  pin?: { revision: string; actor: string; reason: string };
  windowClosed?: { window: string; nextOpen: string | null };
  rolloutStep?: { message: string };
  automated: boolean;
  syncStatus: SyncStatus;
  lastSync?: { outcome: SyncOutcome; message: string };
  health: HealthStatus;
}

/** The one current reason, or null when the target is Synced and Healthy at the wanted revision. */
export function targetReason(f: TargetFacts): TargetReason | null {
  if (f.agentOffline) {
    const since = f.agentOffline.lastSeenAt;
    return {
      code: 'AgentOffline',
      message: since ? `agent offline since ${since}; status is stale` : 'agent never seen',
      since,
    };
  }
  if (f.deletion?.state === 'Pending')
    return {
      code: 'Deleting',
      message: `being deleted with its objects (asked by ${f.deletion.requestedBy}: ${f.deletion.reason}); no longer synced`,
    };
  if (f.deletion)
    return {
      code: 'DeletionFailed',
      message: `deletion failed: ${f.deletion.message}; left as it is until a person asks again`,
    };
  if (f.generatorError)
    return { code: 'GeneratorError', message: `generator error: ${f.generatorError.message}` };
  if (f.deletionGuardHeld) return { code: 'DeletionGuardHeld', message: f.deletionGuardHeld.message };
  if (f.projectDenied) return { code: 'ProjectDenied', message: f.projectDenied.message };
  if (f.sourceUnverified) return { code: 'SourceUnverified', message: f.sourceUnverified.message };
  if (f.pin)
    return {
      code: 'Pinned',
      message: `pinned to ${f.pin.revision.slice(0, 12)} by ${f.pin.actor}: ${f.pin.reason}`,
    };
  if (f.syncStatus !== 'Synced') {
    if (f.windowClosed)
      return {
        code: 'WindowClosed',
        message: `blocked by window ${f.windowClosed.window}; next open ${f.windowClosed.nextOpen ?? 'not within a year'}`,
        window: f.windowClosed.window,
        nextOpen: f.windowClosed.nextOpen,
      };
    if (f.rolloutStep) return { code: 'WaitingForRolloutStep', message: f.rolloutStep.message };
    // A run a person terminated did not finish either: its message says who stopped it and why.
    if (
      f.lastSync &&
      (f.lastSync.outcome === 'Failed' ||
        f.lastSync.outcome === 'Partial' ||
        f.lastSync.outcome === 'Terminated')
    )
      return { code: 'SyncFailed', message: f.lastSync.message || `last sync ${f.lastSync.outcome}` };
    if (!f.automated)
      return { code: 'ManualSyncRequired', message: 'automated sync is off: a person must sync it' };
  }
  if (f.health === 'Progressing') return { code: 'Progressing', message: 'progressing' };
  if (f.health === 'Degraded' || f.health === 'Missing')
    return { code: 'Degraded', message: `health ${f.health}` };
  return null;
}
