import { isObject, type JsonObject } from '../json.js';
import { type FieldSchema } from '../fieldpath/field-schema.js';
import { FieldSet, type PathElements } from '../fieldpath/field-set.js';
import { compare } from '../fieldpath/flatten.js';

/** One managedFields entry, with its field set decoded. */
export interface Manager {
  manager: string;
  operation: 'Apply' | 'Update';
  apiVersion: string;
  time: string;
  subresource?: string;
  set: FieldSet;
}

/**
 * Decoded managedFields by the list they were decoded from. Only a stored snapshot's list (which is
 * never changed) is worth remembering: a no-op re-apply decodes the same one again and again.
 */
const decoded = new WeakMap<object, readonly Manager[]>();

/** The managedFields of a stored snapshot, decoded once; callers must not change the entries. */
export function storedManagers(o: JsonObject): readonly Manager[] {
  const mf = isObject(o['metadata']) ? o['metadata']['managedFields'] : undefined;
  if (!Array.isArray(mf)) return [];
  let managers = decoded.get(mf);
  if (!managers) decoded.set(mf, (managers = decodeManagers(o)));
  return managers;
}

export function decodeManagers(o: JsonObject): Manager[] {
  const mf = isObject(o['metadata']) ? o['metadata']['managedFields'] : undefined;
  if (!Array.isArray(mf)) return [];
  return mf.filter(isObject).map((e) => {
    const m: Manager = {
      manager: typeof e['manager'] === 'string' ? e['manager'] : '',
      operation: e['operation'] === 'Apply' ? 'Apply' : 'Update',
      apiVersion: typeof e['apiVersion'] === 'string' ? e['apiVersion'] : '',
      time: typeof e['time'] === 'string' ? e['time'] : '',
      set: FieldSet.fromFieldsV1(e['fieldsV1']),
    };
    if (typeof e['subresource'] === 'string' && e['subresource']) m.subresource = e['subresource'];
    return m;
  });
}

/** Entries in apiserver order: Apply before Update, then time, manager, apiVersion, subresource. */
export function encodeManagers(managers: Manager[]): JsonObject[] {
  const sorted = [...managers].sort(
    (a, b) =>
      (a.operation === b.operation ? 0 : a.operation === 'Apply' ? -1 : 1) ||
      a.time.localeCompare(b.time) ||
      a.manager.localeCompare(b.manager) ||
      a.apiVersion.localeCompare(b.apiVersion) ||
      (a.subresource ?? '').localeCompare(b.subresource ?? ''),
  );
  return sorted.map((m) => {
    const e: JsonObject = {
      manager: m.manager,
      operation: m.operation,
      apiVersion: m.apiVersion,
      time: m.time,
      fieldsType: 'FieldsV1',
      fieldsV1: m.set.toFieldsV1(),
    };
    if (m.subresource) e['subresource'] = m.subresource;
    return e;
  });
}

export function sameEntry(
  m: Manager,
  manager: string,
  op: Manager['operation'],
  apiVersion: string,
  sub?: string,
) {
  return (
    m.manager === manager &&
    m.operation === op &&
    (m.subresource ?? '') === (sub ?? '') &&
    (op === 'Apply' || m.apiVersion === apiVersion)
  );
}

/**
 * Which fields a write through `subresource` may own: the main resource of a kind with a status
 * subresource never owns status, and /status never owns spec (the strategies reset those).
 */
export function scopeFilter(hasStatus: boolean, subresource?: string): (p: PathElements) => boolean {
  if (subresource === 'status') return (p) => p[0] !== 'f:spec';
  if (hasStatus) return (p) => p[0] !== 'f:status';
  return () => true;
}

export interface UpdateOptions {
  manager: string;
  apiVersion: string;
  subresource?: string;
  time: string;
  schema: FieldSchema;
  hasStatus: boolean;
}

/**
 * Ownership after a non-apply write (POST, PUT, PATCH): the writer's Update entry gains what it
 * changed, every other manager loses it. Updates never conflict.
 */
export function recordUpdate(
  managers: readonly Manager[],
  before: JsonObject,
  after: JsonObject,
  o: UpdateOptions,
): Manager[] {
  const keep = scopeFilter(o.hasStatus, o.subresource);
  // What the scope filter drops anyway (spec through /status, status through the main resource)
  // is left out of the comparison instead of being flattened and compared first.
  const outOfScope = o.subresource === 'status' ? 'spec' : o.hasStatus ? 'status' : undefined;
  const view = (x: JsonObject): JsonObject =>
    outOfScope && x[outOfScope] !== undefined ? { ...x, [outOfScope]: undefined } : x;
  const cmp = compare(view(before), view(after), o.schema);
  const added = cmp.added.filter(keep);
  const modified = cmp.modified.filter(keep);
  const removed = cmp.removed.filter(keep);
  const changed = added.union(modified).union(removed);
  if (changed.isEmpty()) return [...managers];
  const out: Manager[] = [];
  let mine: Manager | undefined;
  for (const m of managers) {
    if (sameEntry(m, o.manager, 'Update', o.apiVersion, o.subresource)) {
      mine = m;
      continue;
    }
    const set = m.set.difference(changed);
    if (!set.isEmpty()) out.push({ ...m, set });
  }
  const set = (mine?.set ?? new FieldSet()).difference(removed).union(modified).union(added);
  if (!set.isEmpty()) {
    const entry: Manager = {
      manager: o.manager,
      operation: 'Update',
      apiVersion: o.apiVersion,
      time: o.time,
      set,
    };
    if (o.subresource) entry.subresource = o.subresource;
    out.push(entry);
  }
  return out;
}
