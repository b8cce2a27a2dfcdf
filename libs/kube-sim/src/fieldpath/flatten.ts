import { clone, deepEqual, isObject, type JsonObject } from '../json.js';
import { type FieldSchema, type ListType } from './field-schema.js';
import { FieldSet, keyElement, PATH_SEPARATOR, type PathElements } from './field-set.js';

/**
 * One node of an object seen as structured-merge-diff does: a leaf (scalar, atomic value, empty
 * map), a map or struct with children, or an element of an associative or set list.
 */
export interface FlatNode {
  pes: PathElements;
  kind: 'leaf' | 'map' | 'struct' | 'elem';
  value?: unknown;
}

/**
 * Struct fields that Go types always serialise (non-pointer structs), so an update never "adds"
 * them and they never get a `.` ownership marker of their own.
 */
const ALWAYS_PRESENT = new Set([
  'metadata',
  'spec',
  'status',
  'template',
  'strategy',
  'updateStrategy',
  'resources',
]);

/** Paths the apiserver never records for anyone (stripmeta). */
export function isStrippedPath(pes: PathElements): boolean {
  const [a, b] = pes;
  if (pes.length === 1) return a === 'f:apiVersion' || a === 'f:kind' || a === 'f:metadata';
  if (a === 'f:metadata' && pes.length === 2)
    return [
      'f:name',
      'f:namespace',
      'f:uid',
      'f:resourceVersion',
      'f:generation',
      'f:creationTimestamp',
      'f:managedFields',
      'f:selfLink',
      'f:clusterName',
      'f:deletionTimestamp',
      'f:deletionGracePeriodSeconds',
    ].includes(b ?? '');
  return a === 'f:metadata' && b === 'f:managedFields';
}

export function listElementKey(el: unknown, lt: ListType): string | undefined {
  if (lt.type === 'set') return `v:${JSON.stringify(el)}`;
  if (lt.type !== 'map' || !isObject(el)) return undefined;
  const k: Record<string, unknown> = {};
  for (const name of lt.keys) {
    const v = el[name] ?? lt.defaults?.[name];
    if (v !== undefined) k[name] = v;
  }
  return keyElement(k);
}

/** Every node of an object by its `pathKey`. */
export function flatten(obj: unknown, schema: FieldSchema): Map<string, FlatNode> {
  const out = new Map<string, FlatNode>();
  const child = (key: string, pe: string): string => (key === '' ? pe : `${key}${PATH_SEPARATOR}${pe}`);
  const walk = (value: unknown, names: string[], pes: string[], key: string): void => {
    if (isObject(value) && !schema.atomic(names)) {
      const keys = Object.keys(value).filter((k) => value[k] !== undefined && value[k] !== null);
      if (keys.length === 0) {
        if (pes.length) out.set(key, { pes, kind: 'leaf', value });
        return;
      }
      const last = names[names.length - 1] ?? '';
      if (pes.length) out.set(key, { pes, kind: ALWAYS_PRESENT.has(last) ? 'struct' : 'map' });
      for (const k of keys) walk(value[k], [...names, k], [...pes, `f:${k}`], child(key, `f:${k}`));
      return;
    }
    if (Array.isArray(value) && value.length > 0) {
      const lt = schema.list(names);
      if (lt.type !== 'atomic') {
        out.set(key, { pes, kind: 'map' });
        for (const el of value) {
          const pe = listElementKey(el, lt);
          if (pe === undefined) continue;
          const elPes = [...pes, pe];
          const elKey = child(key, pe);
          if (lt.type === 'set') out.set(elKey, { pes: elPes, kind: 'leaf', value: el });
          else {
            out.set(elKey, { pes: elPes, kind: 'elem' });
            if (isObject(el))
              for (const k of Object.keys(el))
                if (el[k] !== null) walk(el[k], [...names, k], [...elPes, `f:${k}`], child(elKey, `f:${k}`));
          }
        }
        return;
      }
    }
    if (pes.length) out.set(key, { pes, kind: 'leaf', value });
  };
  walk(obj, [], [], '');
  return out;
}

/** The fields an applier declares: every leaf and list element of its config. */
export function applySet(config: unknown, schema: FieldSchema): FieldSet {
  const s = new FieldSet();
  for (const [k, n] of flatten(config, schema))
    if ((n.kind === 'leaf' || n.kind === 'elem') && !isStrippedPath(n.pes)) s.insertKeyed(k, n.pes);
  return s;
}

/** Every field of an object, as ownership of a whole object (before-first-apply). */
export function fullSet(o: unknown, schema: FieldSchema): FieldSet {
  const s = new FieldSet();
  for (const [k, n] of flatten(o, schema))
    if (n.kind !== 'struct' && !isStrippedPath(n.pes)) s.insertKeyed(k, n.pes);
  return s;
}

export interface Comparison {
  added: FieldSet;
  modified: FieldSet;
  removed: FieldSet;
}

/** Field-level difference between two versions of one object. */
export function compare(before: unknown, after: unknown, schema: FieldSchema): Comparison {
  const a = flatten(before, schema);
  const b = flatten(after, schema);
  const added = new FieldSet();
  const modified = new FieldSet();
  const removed = new FieldSet();
  for (const [k, n] of b) {
    if (n.kind === 'struct' || isStrippedPath(n.pes)) continue;
    const old = a.get(k);
    if (!old || old.kind === 'struct') added.insertKeyed(k, n.pes);
    else if (n.kind === 'leaf' && (old.kind !== 'leaf' || !deepEqual(old.value, n.value)))
      modified.insertKeyed(k, n.pes);
    else if (n.kind !== 'leaf' && old.kind === 'leaf') modified.insertKeyed(k, n.pes);
  }
  for (const [k, n] of a) {
    if (n.kind === 'struct' || isStrippedPath(n.pes)) continue;
    if (!b.has(k)) removed.insertKeyed(k, n.pes);
  }
  return { added, modified, removed };
}

function findElement(list: unknown[], pe: string, lt: ListType): number {
  return list.findIndex((el) => listElementKey(el, lt) === pe);
}

/** Removes one path from an object in place (a map key, or a whole list element). */
export function removePath(o: JsonObject, pes: PathElements, schema: FieldSchema): void {
  let cur: unknown = o;
  const names: string[] = [];
  for (let i = 0; i < pes.length; i++) {
    const pe = pes[i]!;
    const last = i === pes.length - 1;
    if (pe.startsWith('f:')) {
      if (!isObject(cur)) return;
      const name = pe.slice(2);
      if (last) {
        delete cur[name];
        return;
      }
      names.push(name);
      cur = cur[name];
    } else if (Array.isArray(cur)) {
      const idx = pe.startsWith('i:') ? Number(pe.slice(2)) : findElement(cur, pe, schema.list(names));
      if (idx < 0 || idx >= cur.length) return;
      if (last) {
        cur.splice(idx, 1);
        return;
      }
      cur = cur[idx];
    } else return;
  }
}

/** Deletes maps and lists left empty under `pes` by a removal, unless someone still owns them. */
export function pruneEmptyParents(
  o: JsonObject,
  pes: PathElements,
  owned: FieldSet,
  schema: FieldSchema,
): void {
  for (let n = pes.length - 1; n > 0; n--) {
    const parent = pes.slice(0, n);
    if (owned.has(parent)) return;
    const v = valueAt(o, parent, schema);
    const empty = (isObject(v) && Object.keys(v).length === 0) || (Array.isArray(v) && v.length === 0);
    if (!empty || parent[parent.length - 1]?.[0] !== 'f') return;
    removePath(o, parent, schema);
  }
}

export function valueAt(o: unknown, pes: PathElements, schema: FieldSchema): unknown {
  let cur = o;
  const names: string[] = [];
  for (const pe of pes) {
    if (pe.startsWith('f:')) {
      if (!isObject(cur)) return undefined;
      names.push(pe.slice(2));
      cur = cur[pe.slice(2)];
    } else if (Array.isArray(cur)) {
      const idx = pe.startsWith('i:') ? Number(pe.slice(2)) : findElement(cur, pe, schema.list(names));
      cur = cur[idx];
    } else return undefined;
  }
  return cur;
}

/**
 * Merges an apply configuration into the live object: granular maps recurse, associative lists
 * merge by key (live-only elements keep their place), set lists take the union, anything else is
 * replaced by the config's value.
 */
export function mergeApply(
  live: unknown,
  config: unknown,
  schema: FieldSchema,
  names: string[] = [],
): unknown {
  if (isObject(config) && isObject(live) && !schema.atomic(names)) {
    const out: JsonObject = clone(live);
    for (const [k, v] of Object.entries(config)) out[k] = mergeApply(live[k], v, schema, [...names, k]);
    return out;
  }
  if (Array.isArray(config) && Array.isArray(live)) {
    const lt = schema.list(names);
    if (lt.type === 'set') {
      const out = clone(live);
      for (const el of config) if (!out.some((x) => deepEqual(x, el))) out.push(clone(el));
      return out;
    }
    if (lt.type === 'map') {
      const cfgKeys = config.map((el) => listElementKey(el, lt));
      const liveByKey = new Map(live.map((el) => [listElementKey(el, lt), el] as const));
      const emitted = new Set<number>();
      const out: unknown[] = [];
      const emitConfigUpTo = (idx: number): void => {
        for (let i = 0; i <= idx; i++) {
          if (emitted.has(i)) continue;
          emitted.add(i);
          out.push(mergeApply(liveByKey.get(cfgKeys[i]), config[i], schema, names));
        }
      };
      for (const el of live) {
        const idx = cfgKeys.indexOf(listElementKey(el, lt));
        if (idx < 0) out.push(clone(el));
        else emitConfigUpTo(idx);
      }
      emitConfigUpTo(config.length - 1);
      return out;
    }
  }
  return clone(config);
}
