import { isPlainObject, type PathSegment } from './json-pointer.js';
import { isAtomicMap, listSchemaOf } from './list-schema.js';

export const LAST_APPLIED_ANNOTATION = 'kubectl.kubernetes.io/last-applied-configuration';

/** Never part of an applier's field set (structured-merge-diff strips them). */
const STRIPPED_ROOT = new Set(['apiVersion', 'kind', 'status']);
const STRIPPED_METADATA = new Set([
  'name',
  'namespace',
  'uid',
  'resourceVersion',
  'generation',
  'creationTimestamp',
  'managedFields',
  'selfLink',
]);

/**
 * The fields `kubectl apply` (client-side) last set, read from the live object's
 * last-applied-configuration annotation and written as a FieldsV1 set, so that an object never
 * applied with server-side apply still shows the fields a manifest dropped (Argo CD's three-way
 * diff). Undefined when the annotation is absent or not JSON.
 */
export function lastAppliedFieldSet(kind: string, live: unknown): Record<string, unknown> | undefined {
  const metadata = isPlainObject(live) ? live['metadata'] : undefined;
  const annotations = isPlainObject(metadata) ? metadata['annotations'] : undefined;
  const text = isPlainObject(annotations) ? annotations[LAST_APPLIED_ANNOTATION] : undefined;
  if (typeof text !== 'string') return undefined;
  let applied: unknown;
  try {
    applied = JSON.parse(text);
  } catch {
    return undefined;
  }
  return isPlainObject(applied) ? mapFields(kind, applied, []) : undefined;
}

function mapFields(
  kind: string,
  value: Record<string, unknown>,
  path: PathSegment[],
): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [key, child] of Object.entries(value)) {
    if (path.length === 0 && STRIPPED_ROOT.has(key)) continue;
    if (path.length === 1 && path[0] === 'metadata' && STRIPPED_METADATA.has(key)) continue;
    const set = valueFields(kind, child, [...path, key]);
    if (set !== undefined) out[`f:${key}`] = set;
  }
  return out;
}

/** A field's set: `{}` for a value owned whole; undefined for null or empty values, which own nothing. */
function valueFields(kind: string, value: unknown, path: PathSegment[]): Record<string, unknown> | undefined {
  if (value === null || value === undefined) return undefined;
  if (isPlainObject(value)) {
    if (Object.keys(value).length === 0) return undefined;
    if (isAtomicMap(kind, path)) return {};
    const set = mapFields(kind, value, path);
    return Object.keys(set).length === 0 ? undefined : set;
  }
  if (Array.isArray(value)) {
    if (value.length === 0) return undefined;
    const schema = listSchemaOf(kind, path);
    if (schema.type === 'set') {
      return Object.fromEntries(value.map((v) => [`v:${JSON.stringify(v)}`, {}]));
    }
    if (schema.type === 'map') {
      const out: Record<string, unknown> = {};
      for (const el of value) {
        if (!isPlainObject(el)) return {};
        const key: Record<string, unknown> = {};
        for (const k of [...schema.keys].sort()) {
          const v = el[k] ?? schema.keyDefaults[k];
          if (v === undefined) return {};
          key[k] = v;
        }
        out[`k:${JSON.stringify(key)}`] = { '.': {}, ...mapFields(kind, el, [...path, 0]) };
      }
      return out;
    }
    return {};
  }
  return {};
}
