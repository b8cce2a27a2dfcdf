import { isPercent } from '@flotilla/plan';
import { HubError } from '../common/hub-error.js';

export {
  evaluateDeletionGuard,
  nextGuardBaseline,
  deletionGuardLimit,
  type GuardInput,
  type GuardVerdict,
} from '@flotilla/plan';

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
  if (v !== undefined && !isPercent(v)) {
    throw new HubError(
      400,
      'invalid-appset',
      `maxDeletePercent must be a number from 0 to 100 (got ${JSON.stringify(v)})`,
      path,
    );
  }
}

/** Argo CD's finalizer on an Application: deleting it deletes its objects (`/background`, `/foreground` too). */
export const RESOURCES_FINALIZER = 'resources-finalizer.argocd.argoproj.io';

/**
 * Whether targets the appset's expansion removes are deleted with their objects (Argo CD: the
 * template's `metadata.finalizers` carries the resources finalizer, and `preserveResourcesOnDeletion`
 * is not set). Otherwise they are orphaned: their objects stay in the cluster.
 */
export function deletesResourcesOnDeletion(document: unknown): boolean {
  if (preservesResourcesOnDeletion(document)) return false;
  const template = asObject(asObject(asObject(document)?.['spec'])?.['template']);
  const finalizers = asObject(template?.['metadata'])?.['finalizers'];
  return (
    Array.isArray(finalizers) &&
    finalizers.some(
      (f) => typeof f === 'string' && (f === RESOURCES_FINALIZER || f.startsWith(`${RESOURCES_FINALIZER}/`)),
    )
  );
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
