import { type HealthResult } from '../health-result.js';
import { field, list } from '../object-fields.js';
import { result } from './rule.js';

/** Sync hooks keep this finalizer until Argo CD (or Flotilla) has read their outcome; they are not "being deleted". */
const HOOK_FINALIZER = 'argocd.argoproj.io/hook-finalizer';

/** Argo CD's verdict for an object that is being deleted, naming the finalizers that hold it. */
export function pendingDeletion(obj: unknown): HealthResult | null {
  const deletionTimestamp = field(obj, 'metadata', 'deletionTimestamp');
  if (deletionTimestamp === undefined || deletionTimestamp === null) return null;
  const finalizers = list(obj, 'metadata', 'finalizers').filter((f): f is string => typeof f === 'string');
  if (finalizers.includes(HOOK_FINALIZER)) return null;
  return result(
    'Progressing',
    finalizers.length > 0
      ? `Pending deletion; blocked by finalizers: ${finalizers.join(', ')}`
      : 'Pending deletion',
  );
}
