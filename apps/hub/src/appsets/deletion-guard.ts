import { HubError } from '../common/hub-error.js';

/** What the guard says about one expansion: would it be held, and why. */
export interface GuardVerdict {
  wouldHold: boolean;
  /** Share of the appset's current targets the expansion would delete (0–100, one decimal). */
  deletePercent: number;
  /** The largest share that goes through without confirmation. */
  limit: number;
}

/**
 * Held when more than `limit` % of the current targets would go, and always when all of them would
 * (a Git host or API answering an empty list looks exactly like that). No targets yet: nothing to lose.
 */
export function evaluateDeletionGuard(
  currentCount: number,
  deleteCount: number,
  limit: number,
): GuardVerdict {
  if (currentCount === 0 || deleteCount === 0) return { wouldHold: false, deletePercent: 0, limit };
  const share = (deleteCount * 100) / currentCount;
  const deletePercent = Math.round(share * 10) / 10;
  return { wouldHold: deleteCount >= currentCount || share > limit, deletePercent, limit };
}

/**
 * The appset's own limit: `spec.deletionGuard.maxDeletePercent` in Flotilla's form. Argo CD documents
 * have no such field, so they get the hub's default (DELETION_GUARD_PERCENT).
 */
export function deletionGuardLimit(document: unknown, hubDefault: number): number {
  const doc = asObject(document);
  if (doc?.['apiVersion'] === 'argoproj.io/v1alpha1') return hubDefault;
  const guard = asObject(asObject(doc?.['spec'])?.['deletionGuard']);
  const v = guard?.['maxDeletePercent'];
  return v === undefined ? hubDefault : (v as number);
}

/** Validates `spec.deletionGuard` before an appset is stored; a bad value names its field. */
export function checkDeletionGuardSpec(document: unknown): void {
  const spec = asObject(asObject(document)?.['spec']);
  const guard = spec?.['deletionGuard'];
  if (guard === undefined) return;
  const path = 'spec.deletionGuard.maxDeletePercent';
  const g = asObject(guard);
  if (!g)
    throw new HubError(400, 'invalid-appset', 'spec.deletionGuard must be an object', 'spec.deletionGuard');
  const v = g['maxDeletePercent'];
  if (v !== undefined && (typeof v !== 'number' || !Number.isFinite(v) || v < 0 || v > 100)) {
    throw new HubError(
      400,
      'invalid-appset',
      `maxDeletePercent must be a number from 0 to 100 (got ${JSON.stringify(v)})`,
      path,
    );
  }
}

/** Argo CD's `spec.syncPolicy.preserveResourcesOnDeletion`. */
export function preservesResourcesOnDeletion(document: unknown): boolean {
  const syncPolicy = asObject(asObject(asObject(document)?.['spec'])?.['syncPolicy']);
  return syncPolicy?.['preserveResourcesOnDeletion'] === true;
}

function asObject(v: unknown): Record<string, unknown> | undefined {
  return typeof v === 'object' && v !== null && !Array.isArray(v)
    ? (v as Record<string, unknown>)
    : undefined;
}
