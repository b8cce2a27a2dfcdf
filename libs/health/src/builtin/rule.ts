import { type HealthResult, type HealthStatus } from '../health-result.js';
import { type GroupVersionKind, type Unstructured, formatGroupVersionKind } from '../object-fields.js';

/** A built-in health check for one kind; it sees the whole object and its parsed apiVersion. */
export type BuiltinRule = (obj: Unstructured, gvk: GroupVersionKind) => HealthResult;

export function result(status: HealthStatus, message = ''): HealthResult {
  return { status, message };
}

/**
 * Argo CD converts the object to the typed API struct of the versions it knows; any other version of the kind
 * fails that conversion and the check reports Unknown with this message.
 */
export function unsupportedVersion(gvk: GroupVersionKind, label: string): HealthResult {
  return result('Unknown', `unsupported ${label} GVK: ${formatGroupVersionKind(gvk)}`);
}

/** Go's `%q` for the plain strings Kubernetes names are made of. */
export function quote(value: string): string {
  return JSON.stringify(value);
}
