/**
 * Reading fields of an unstructured Kubernetes object the way Argo CD's typed conversion does: a missing field
 * reads as the Go zero value (0, "", false, empty list).
 */

export type Unstructured = Record<string, unknown>;

export function isRecord(value: unknown): value is Unstructured {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

export function field(obj: unknown, ...path: string[]): unknown {
  let current: unknown = obj;
  for (const key of path) {
    if (!isRecord(current)) return undefined;
    current = current[key];
  }
  return current;
}

export function str(obj: unknown, ...path: string[]): string {
  const value = field(obj, ...path);
  return typeof value === 'string' ? value : '';
}

export function int(obj: unknown, ...path: string[]): number {
  const value = field(obj, ...path);
  return typeof value === 'number' ? Math.trunc(value) : 0;
}

/** An integer pointer field (`*int32` in Go): undefined when absent. */
export function optionalInt(obj: unknown, ...path: string[]): number | undefined {
  const value = field(obj, ...path);
  return typeof value === 'number' ? Math.trunc(value) : undefined;
}

export function list(obj: unknown, ...path: string[]): unknown[] {
  const value = field(obj, ...path);
  return Array.isArray(value) ? value : [];
}

export interface Condition {
  type: string;
  status: string;
  reason: string;
  message: string;
}

export function conditions(obj: unknown, ...path: string[]): Condition[] {
  return list(obj, ...(path.length ? path : ['status', 'conditions'])).map((c) => ({
    type: str(c, 'type'),
    status: str(c, 'status'),
    reason: str(c, 'reason'),
    message: str(c, 'message'),
  }));
}

export function findCondition(all: Condition[], type: string): Condition | undefined {
  return all.find((c) => c.type === type);
}

export interface GroupVersionKind {
  group: string;
  version: string;
  kind: string;
}

export function groupVersionKind(obj: unknown): GroupVersionKind {
  const apiVersion = str(obj, 'apiVersion');
  const slash = apiVersion.indexOf('/');
  return {
    group: slash >= 0 ? apiVersion.slice(0, slash) : '',
    version: slash >= 0 ? apiVersion.slice(slash + 1) : apiVersion,
    kind: str(obj, 'kind'),
  };
}

/** Go's `schema.GroupVersionKind.String()`, used verbatim in Argo CD's "unsupported GVK" messages. */
export function formatGroupVersionKind(gvk: GroupVersionKind): string {
  return `${gvk.group}/${gvk.version}, Kind=${gvk.kind}`;
}
