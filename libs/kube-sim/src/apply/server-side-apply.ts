import { StatusError } from '../errors.js';
import { deepEqual, isObject, type JsonObject } from '../json.js';
import { type FieldSchema } from '../fieldpath/field-schema.js';
import { FieldSet, pathString } from '../fieldpath/field-set.js';
import {
  applySet,
  compare,
  fullSet,
  mergeApply,
  pruneEmptyParents,
  removePath,
} from '../fieldpath/flatten.js';
import { type Manager, sameEntry, scopeFilter } from './managed-fields.js';

export interface ApplyOptions {
  manager: string;
  apiVersion: string;
  force: boolean;
  subresource?: string;
  time: string;
  schema: FieldSchema;
  hasStatus: boolean;
  /** Name used in conflict errors' details. */
  name: string;
  group: string;
  resource: string;
}

export interface ApplyResult {
  /** The merged object before server-side defaulting (the caller defaults it). */
  object: JsonObject;
  managers: Manager[];
  /** The applier's entry, whose time the caller refreshes only if the object changed. */
  applier: Manager;
}

function describe(m: Manager): string {
  if (m.operation === 'Apply') return `"${m.manager}"`;
  const sub = m.subresource ? ` with subresource "${m.subresource}"` : '';
  return `"${m.manager}"${sub} using ${m.apiVersion}`;
}

/**
 * Server-side apply as in structured-merge-diff's `Updater.Apply`: merge, conflicts (or forced
 * takeover), the applier's new set, then removal of fields it stopped declaring that nobody else
 * owns. `live` is undefined on create.
 */
export function serverSideApply(
  live: JsonObject | undefined,
  liveManagers: readonly Manager[],
  config: JsonObject,
  o: ApplyOptions,
): ApplyResult {
  const keep = scopeFilter(o.hasStatus, o.subresource);
  let managers = liveManagers;
  const base = live ?? {};
  if (live && managers.length === 0) {
    const set = fullSet(live, o.schema).filter(keep);
    if (!set.isEmpty())
      managers = [
        { manager: 'before-first-apply', operation: 'Update', apiVersion: o.apiVersion, time: o.time, set },
      ];
  }
  const merged = mergeApply(base, config, o.schema) as JsonObject;
  const newSet = applySet(config, o.schema).filter(keep);
  // Without a status in the config, the merged status is the live one: nothing there to compare.
  const view = (x: JsonObject): JsonObject =>
    config['status'] === undefined && x['status'] !== undefined ? { ...x, status: undefined } : x;
  const cmp = compare(view(base), view(merged), o.schema);
  const changed = cmp.modified.union(cmp.added).filter(keep);

  const previous = managers.find((m) => sameEntry(m, o.manager, 'Apply', o.apiVersion, o.subresource));
  // Every other entry counts as another manager, the applier's own Update entries included.
  const others = managers.filter((m) => m !== previous);

  const conflicts: { manager: Manager; set: FieldSet }[] = [];
  for (const m of others) {
    const c = m.set.intersection(changed);
    if (!c.isEmpty()) conflicts.push({ manager: m, set: c });
  }
  if (conflicts.length && !o.force) throw conflictError(conflicts);

  const out: Manager[] = [];
  for (const m of others) {
    let set = m.set.difference(cmp.removed);
    const c = conflicts.find((x) => x.manager === m);
    if (c) set = set.difference(c.set);
    if (!set.isEmpty()) out.push({ ...m, set });
  }

  // Prune: what this applier declared last time and no longer does, unless someone else owns it.
  if (previous) {
    const ownedByOthers = out.reduce((acc, m) => acc.union(m.set), new FieldSet()).union(newSet);
    const gone = previous.set.difference(newSet).difference(ownedByOthers);
    // Outermost first: a list element goes whole, before its key fields could be stripped from it.
    const ordered = gone.paths().sort((a, b) => a.length - b.length);
    for (const p of ordered) {
      removePath(merged, p, o.schema);
      pruneEmptyParents(merged, p, ownedByOthers, o.schema);
    }
  }

  const applier: Manager = {
    manager: o.manager,
    operation: 'Apply',
    apiVersion: o.apiVersion,
    time: previous?.time ?? o.time,
    set: newSet,
  };
  if (o.subresource) applier.subresource = o.subresource;
  if (!newSet.isEmpty()) out.push(applier);
  return { object: merged, managers: out, applier };
}

function conflictError(conflicts: { manager: Manager; set: FieldSet }[]): StatusError {
  const causes: { reason: string; message: string; field: string }[] = [];
  const sorted = [...conflicts].sort((a, b) => a.manager.manager.localeCompare(b.manager.manager));
  for (const c of sorted) {
    const paths = c.set.paths().map(pathString).sort();
    for (const field of paths)
      causes.push({ reason: 'FieldManagerConflict', message: `conflict with ${describe(c.manager)}`, field });
  }
  let message: string;
  if (causes.length === 1) {
    message = `Apply failed with 1 conflict: ${causes[0]!.message}: ${causes[0]!.field}`;
  } else {
    const lines = sorted.map(
      (c) =>
        `conflicts with ${describe(c.manager)}:\n${c.set
          .paths()
          .map(pathString)
          .sort()
          .map((p) => `- ${p}`)
          .join('\n')}`,
    );
    message = `Apply failed with ${causes.length} conflicts: ${lines.join('\n')}`;
  }
  return new StatusError(409, 'Conflict', message, { causes });
}

/** True when the apply changed nothing but ownership (so `time` must not be refreshed). */
export function sameContent(a: JsonObject, b: JsonObject): boolean {
  // Shallow views without managedFields and resourceVersion: nothing is copied or changed.
  const strip = (x: JsonObject): JsonObject =>
    isObject(x['metadata'])
      ? { ...x, metadata: { ...x['metadata'], managedFields: undefined, resourceVersion: undefined } }
      : x;
  return deepEqual(strip(a), strip(b));
}
