import { formatValue } from '@flotilla/gotemplate';
import { type Params } from './types.js';

/** A plain JSON object (not an array, not null). */
export function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * jeremywohl/flatten in dot style, as Argo CD uses it: nested objects and arrays become dotted keys
 * (`a.b`, `list.0`); empty objects and arrays vanish; leaves are kept as they are.
 */
export function flatten(value: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  const walk = (node: unknown, prefix: string): void => {
    const entries: [string, unknown][] = Array.isArray(node)
      ? node.map((v, i) => [String(i), v])
      : Object.entries(node as Record<string, unknown>);
    for (const [k, v] of entries) {
      const key = prefix === '' ? k : `${prefix}.${k}`;
      if (Array.isArray(v) || isPlainObject(v)) walk(v, key);
      else out[key] = v;
    }
  };
  walk(value, '');
  return out;
}

/** Flattened, every leaf printed with Go's `%v`: what post-selectors match against. */
export function flattenToStrings(params: Params): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(flatten(params))) out[k] = formatValue(v);
  return out;
}

/** Argo CD's ConvertToMapStringString: each top-level value printed with `%v`. */
export function toStringMap(params: Params): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(params)) out[k] = formatValue(v);
  return out;
}

/** JSON with sorted object keys (Go's encoding of maps), for comparing values. */
export function stableJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(stableJson).join(',')}]`;
  if (isPlainObject(value)) {
    const keys = Object.keys(value).sort();
    return `{${keys.map((k) => `${JSON.stringify(k)}:${stableJson(value[k])}`).join(',')}}`;
  }
  return JSON.stringify(value ?? null);
}

export function deepClone<T>(value: T): T {
  return structuredClone(value);
}

/** mergo.Merge(dst, src, WithOverride) over JSON values: src wins, nested objects merge key by key. */
export function mergeOverride(
  dst: Record<string, unknown>,
  src: Record<string, unknown>,
): Record<string, unknown> {
  const out: Record<string, unknown> = { ...dst };
  for (const [k, v] of Object.entries(src)) {
    const current = out[k];
    out[k] = isPlainObject(current) && isPlainObject(v) ? mergeOverride(current, v) : deepClone(v);
  }
  return out;
}

/** mergo.Merge(dst, src) without override: src only fills what dst leaves empty. */
export function mergeFill(dst: unknown, src: unknown): unknown {
  if (isPlainObject(dst) && isPlainObject(src)) {
    const out: Record<string, unknown> = { ...dst };
    for (const [k, v] of Object.entries(src)) out[k] = mergeFill(out[k], v);
    return out;
  }
  return isEmptyValue(dst) ? deepClone(src) : dst;
}

function isEmptyValue(value: unknown): boolean {
  return (
    value === undefined ||
    value === null ||
    value === '' ||
    value === false ||
    value === 0 ||
    (Array.isArray(value) && value.length === 0)
  );
}

/** RFC 7386 JSON merge patch: objects merge, `null` deletes, anything else replaces. */
export function mergePatch(target: unknown, patch: unknown): unknown {
  if (!isPlainObject(patch)) return deepClone(patch);
  const out: Record<string, unknown> = isPlainObject(target) ? { ...target } : {};
  for (const [k, v] of Object.entries(patch)) {
    if (v === null) delete out[k];
    else out[k] = mergePatch(out[k], v);
  }
  return out;
}
