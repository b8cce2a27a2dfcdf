// Whether a target can be asked to sync, and which revision a sync of it runs.
import { HubError } from '../common/hub-error.js';

/**
 * Why a sync asked of a target could never run, or null: nothing released to its cluster yet, or it
 * is being deleted (its agent gets a tombstone instead of an assignment, so the request would only
 * wait until it expired).
 */
export function unsyncable(t: {
  releasedDigest: string | null;
  pin: unknown;
  deletionState: string | null;
}): { code: string; reason: string } | null {
  if (t.deletionState !== null)
    return { code: 'target-deleting', reason: 'is being deleted with its objects' };
  if (!t.releasedDigest && !t.pin)
    return {
      code: 'target-not-released',
      reason: 'has no released revision yet (still rendering, or held by its rollout)',
    };
  return null;
}

/** A target as a single sync request reads it: what it is given, and what Git wants of it. */
export interface SyncedTarget {
  name: string;
  releasedRevision: string | null;
  releasedDigest: string | null;
  desiredRevision: string;
  pin: { revision: string; bundleDigest: string; expiresAt: Date | null } | null;
}

/** What the target's agent is given: a pin (unexpired) wins over the release, as in its assignments. */
export interface AssignedRevision {
  revision: string;
  digest: string;
  why: 'pinned' | 'released';
}

export function assignedRevision(target: SyncedTarget): AssignedRevision {
  const pin = target.pin;
  const pinned = pin && (!pin.expiresAt || pin.expiresAt.getTime() > Date.now());
  return pinned
    ? { revision: pin.revision, digest: pin.bundleDigest, why: 'pinned' }
    : { revision: target.releasedRevision ?? '', digest: target.releasedDigest ?? '', why: 'released' };
}

/**
 * The revision a request names, as the full revision the target is assigned; a sync runs what its
 * agent is given, so any other revision is refused (422) saying how to get there instead.
 */
export function requestedRevision(
  target: SyncedTarget,
  assigned: AssignedRevision,
  asked: string | undefined,
): string | undefined {
  if (asked === undefined) return undefined;
  const lower = asked.toLowerCase();
  if (/^[0-9a-f]{7,64}$/.test(lower) && assigned.revision.startsWith(lower)) return assigned.revision;
  const gitWants =
    assigned.why === 'released' && target.desiredRevision !== assigned.revision
      ? `; Git wants ${target.desiredRevision.slice(0, 12)}, not released to it yet`
      : '';
  throw new HubError(
    422,
    'revision-not-assigned',
    `target "${target.name}" is assigned revision ${assigned.revision.slice(0, 12)} (${assigned.why}${gitWants}): a sync runs the revision its agent is given, so ${asked} cannot be synced by itself — pin the target to a revision it ran (POST /api/v1/targets/${target.name}/pin) and sync that`,
    'revision',
  );
}
