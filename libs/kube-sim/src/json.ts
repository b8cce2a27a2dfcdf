/** Small JSON helpers shared by every layer. Objects are plain JSON values, never class instances. */
export type JsonObject = Record<string, unknown>;

export function isObject(v: unknown): v is JsonObject {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/**
 * A deep copy of a JSON value, as a JSON round trip would make it (keys holding undefined are
 * dropped, undefined array slots and non-finite numbers become null), without the text in between.
 */
export function clone<T>(v: T): T {
  return v === undefined ? v : (copyJson(v) as T);
}

function copyJson(v: unknown): unknown {
  if (typeof v !== 'object' || v === null) return typeof v === 'number' && !Number.isFinite(v) ? null : v;
  if (Array.isArray(v)) {
    const out = new Array<unknown>(v.length);
    for (let i = 0; i < v.length; i++) {
      const x: unknown = v[i];
      out[i] = x === undefined || typeof x === 'function' ? null : copyJson(x);
    }
    return out;
  }
  if (typeof (v as { toJSON?: unknown }).toJSON === 'function')
    return JSON.parse(JSON.stringify(v)) as unknown;
  const out: JsonObject = {};
  for (const k of Object.keys(v)) {
    const x = (v as JsonObject)[k];
    if (x === undefined || typeof x === 'function') continue;
    // A parsed `__proto__` key is data: define it, never assign it (that would set the prototype).
    if (k === '__proto__')
      Object.defineProperty(out, k, {
        value: copyJson(x),
        enumerable: true,
        writable: true,
        configurable: true,
      });
    else out[k] = copyJson(x);
  }
  return out;
}

/** Freezes a JSON value and everything inside it (stored snapshots, under the store's `freeze` option). */
export function deepFreeze<T>(v: T): T {
  if (typeof v !== 'object' || v === null || Object.isFrozen(v)) return v;
  Object.freeze(v);
  for (const x of Object.values(v as object)) deepFreeze(x);
  return v;
}

export function deepEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (Array.isArray(a)) {
    if (!Array.isArray(b) || a.length !== b.length) return false;
    return a.every((x, i) => deepEqual(x, b[i]));
  }
  if (isObject(a) && isObject(b)) {
    const ka = Object.keys(a).filter((k) => a[k] !== undefined);
    const kb = Object.keys(b).filter((k) => b[k] !== undefined);
    if (ka.length !== kb.length) return false;
    return ka.every((k) => deepEqual(a[k], b[k]));
  }
  return false;
}

/** Reads `obj.a.b.c` for a path of keys (numeric keys index arrays); undefined when any step is missing. */
export function getPath(obj: unknown, path: readonly string[]): unknown {
  let cur = obj;
  for (const k of path) {
    if (Array.isArray(cur) && /^\d+$/.test(k)) cur = cur[Number(k)];
    else if (isObject(cur)) cur = cur[k];
    else return undefined;
  }
  return cur;
}

/** Sets `obj.a.b.c = value`, creating intermediate objects. */
export function setPath(obj: JsonObject, path: readonly string[], value: unknown): void {
  let cur = obj;
  for (const k of path.slice(0, -1)) {
    const next = cur[k];
    if (isObject(next)) cur = next;
    else {
      const fresh: JsonObject = {};
      cur[k] = fresh;
      cur = fresh;
    }
  }
  const last = path[path.length - 1];
  if (last !== undefined) cur[last] = value;
}

/** Returns a sub-object, creating it when missing. */
export function obj(parent: JsonObject, key: string): JsonObject {
  const v = parent[key];
  if (isObject(v)) return v;
  const fresh: JsonObject = {};
  parent[key] = fresh;
  return fresh;
}

export function meta(o: JsonObject): JsonObject {
  return obj(o, 'metadata');
}

/** Drops explicit nulls (and undefined) recursively: apply configs often carry `creationTimestamp: null`. */
export function stripNulls(v: unknown): unknown {
  if (Array.isArray(v)) return v.filter((x) => x !== null).map(stripNulls);
  if (isObject(v)) {
    const out: JsonObject = {};
    for (const [k, x] of Object.entries(v)) if (x !== null && x !== undefined) out[k] = stripNulls(x);
    return out;
  }
  return v;
}

/** Text of a JSON scalar for messages and keys: '' for null/undefined, JSON for objects. */
export function str(v: unknown): string {
  if (typeof v === 'string') return v;
  if (v === undefined || v === null) return '';
  if (typeof v === 'number' || typeof v === 'boolean' || typeof v === 'bigint') return String(v);
  return JSON.stringify(v);
}
