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
  'PolicyDenied',
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

/** An object as an admission policy's verdict names it (apiVersion as written, namespace as applied). */
export const policyObjectRefSchema = z.object({
  apiVersion: z.string(),
  kind: z.string(),
  namespace: z.string().nullable(),
  name: z.string(),
});
export type PolicyObjectRef = z.infer<typeof policyObjectRefSchema>;

/**
 * Why an admission policy holds a target's new bundle back (its previous released revision keeps
 * running): the first Deny, as the hub stored it on the target.
 */
export const policyDenialSchema = z.object({
  /** The bundle and commit denied. */
  digest: z.string(),
  revision: z.string(),
  policy: z.string(),
  binding: z.string(),
  object: policyObjectRefSchema,
  message: z.string(),
  /** How many Deny decisions the bundle got in all (the first is named). */
  denials: z.number().int().positive(),
});
export type PolicyDenial = z.infer<typeof policyDenialSchema>;

/** The short answer (`explain` is the long one): a code, a sentence, and the facts it names. */
export const targetReasonSchema = z.object({
  code: targetReasonCodeSchema,
  message: z.string(),
  /** AgentOffline: when the agent was last seen (null: never). */
  since: z.string().nullable().optional(),
  /** WindowClosed: the window that holds the target, and when syncs may run again (null: not within a year). */
  window: z.string().optional(),
  nextOpen: z.string().nullable().optional(),
  /** PolicyDenied: the policy and binding that deny, and the object they deny. */
  policy: z.string().optional(),
  binding: z.string().optional(),
  object: policyObjectRefSchema.optional(),
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
  /** An admission policy denies the bundle Git wants (not released; the previous one keeps running). */
  policyDenied?: PolicyDenial;
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
  if (f.policyDenied) {
    const d = f.policyDenied;
    const object = `${d.object.kind} ${d.object.namespace ? `${d.object.namespace}/` : ''}${d.object.name}`;
    const more = d.denials > 1 ? ` (and ${d.denials - 1} more denial${d.denials > 2 ? 's' : ''})` : '';
    return {
      code: 'PolicyDenied',
      message: `policy ${d.policy} (binding ${d.binding}) denies ${object} at ${d.revision.slice(0, 12)}: ${d.message}${more}; the previous revision keeps running`,
      policy: d.policy,
      binding: d.binding,
      object: d.object,
    };
  }
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
