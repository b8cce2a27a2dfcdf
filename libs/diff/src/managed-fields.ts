import { isPlainObject, isPrefix, scalarText, type PathSegment } from './json-pointer.js';
import { listSchemaOf } from './list-schema.js';

/** One managedFields entry, with its FieldsV1 set (`f:`, `k:`, `v:`, `i:` keys; `{}` leaves). */
export interface ManagedFieldsEntry {
  manager: string;
  operation: string;
  subresource: string;
  fields: Record<string, unknown>;
}

export function managedFieldsOf(live: unknown): ManagedFieldsEntry[] {
  const metadata = isPlainObject(live) ? live['metadata'] : undefined;
  const entries = isPlainObject(metadata) ? metadata['managedFields'] : undefined;
  if (!Array.isArray(entries)) return [];
  const out: ManagedFieldsEntry[] = [];
  for (const e of entries) {
    if (!isPlainObject(e) || typeof e['manager'] !== 'string' || !isPlainObject(e['fieldsV1'])) continue;
    out.push({
      manager: e['manager'],
      operation: typeof e['operation'] === 'string' ? e['operation'] : '',
      subresource: typeof e['subresource'] === 'string' ? e['subresource'] : '',
      fields: e['fieldsV1'],
    });
  }
  return out;
}

/** A field set entry resolved against an object: the node at `path`, and whether all below it is owned too. */
export interface OwnedNode {
  path: PathSegment[];
  /** A `{}` leaf: the value is owned whole (a scalar, or an atomic map or list). */
  whole: boolean;
}

/** One step of a FieldsV1 set resolved in an object: the key, and the segment it maps to (if present). */
export interface FieldStep {
  key: string;
  child: Record<string, unknown>;
  segment: PathSegment | undefined;
}

/**
 * Resolves the children of a FieldsV1 node against `value` (the object at `path`): `f:x` is key `x`,
 * `k:{...}` the list element with those key values, `v:...` the set element equal to it, `i:n` index n.
 * A child absent from the object gets segment undefined.
 */
export function fieldSteps(
  kind: string,
  node: Record<string, unknown>,
  value: unknown,
  path: readonly PathSegment[],
): FieldStep[] {
  const steps: FieldStep[] = [];
  for (const [key, raw] of Object.entries(node)) {
    if (key === '.') continue;
    const child = isPlainObject(raw) ? raw : {};
    steps.push({ key, child, segment: resolveStep(kind, key, value, path) });
  }
  return steps;
}

function resolveStep(
  kind: string,
  key: string,
  value: unknown,
  path: readonly PathSegment[],
): PathSegment | undefined {
  const body = key.slice(2);
  if (key.startsWith('f:')) {
    const name = kind === 'Secret' && path.length === 0 && body === 'stringData' ? 'data' : body;
    return isPlainObject(value) && Object.hasOwn(value, name) ? name : undefined;
  }
  if (!Array.isArray(value)) return undefined;
  if (key.startsWith('i:')) {
    const i = Number(body);
    return Number.isInteger(i) && i >= 0 && i < value.length ? i : undefined;
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(body);
  } catch {
    return undefined;
  }
  if (key.startsWith('v:')) {
    const i = value.findIndex((v) => JSON.stringify(v) === JSON.stringify(parsed));
    return i < 0 ? undefined : i;
  }
  if (key.startsWith('k:') && isPlainObject(parsed)) {
    const schema = listSchemaOf(kind, path);
    const defaults = schema.type === 'map' ? schema.keyDefaults : {};
    const i = value.findIndex((el) => matchesKey(el, parsed, defaults));
    return i < 0 ? undefined : i;
  }
  return undefined;
}

/** Whether a list element carries the given key values; a missing key field takes its schema default. */
export function matchesKey(
  element: unknown,
  key: Record<string, unknown>,
  keyDefaults: Readonly<Record<string, unknown>>,
): boolean {
  if (!isPlainObject(element)) return false;
  return Object.entries(key).every(([k, v]) => {
    const actual = element[k] ?? keyDefaults[k];
    if (actual === v) return true;
    const text = scalarText(actual);
    return text !== undefined && text === scalarText(v);
  });
}

/** Every node of an entry's field set that exists in `obj`, with its path in `obj`. */
export function ownedNodes(kind: string, entry: ManagedFieldsEntry, obj: unknown): OwnedNode[] {
  const out: OwnedNode[] = [];
  const walk = (node: Record<string, unknown>, value: unknown, path: PathSegment[]): void => {
    for (const step of fieldSteps(kind, node, value, path)) {
      if (step.segment === undefined) continue;
      const childPath = [...path, step.segment];
      const childValue = (value as Record<string | number, unknown>)[step.segment];
      const keys = Object.keys(step.child);
      if (keys.length === 0) out.push({ path: childPath, whole: true });
      else {
        if (keys.includes('.')) out.push({ path: childPath, whole: false });
        walk(step.child, childValue, childPath);
      }
    }
  };
  walk(entry.fields, obj, []);
  return out;
}

/** Whether a set of owned nodes covers the field at `path` (owns it, or owns an ancestor whole). */
export function covers(nodes: readonly OwnedNode[], path: readonly PathSegment[]): boolean {
  return nodes.some(
    (n) => (n.whole && isPrefix(n.path, path)) || (n.path.length === path.length && isPrefix(n.path, path)),
  );
}
