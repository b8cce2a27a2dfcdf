import { type IgnoreRuleInput } from '@flotilla/contract';
import { DiffError } from './diff-error.js';
import { compileIgnoreRules, identityOf } from './ignore-rules.js';
import {
  comparePaths,
  formatPointer,
  getAt,
  isPlainObject,
  isPrefix,
  removePaths,
  type PathSegment,
} from './json-pointer.js';
import {
  comparesWhole,
  isIntOrStringField,
  isQuantityField,
  listSchemaOf,
  mergeKeyOf,
} from './list-schema.js';
import {
  covers,
  fieldSteps,
  managedFieldsOf,
  matchesKey,
  ownedNodes,
  type ManagedFieldsEntry,
  type OwnedNode,
} from './managed-fields.js';
import { lastAppliedFieldSet } from './last-applied.js';
import { normalizeObject } from './normalize-object.js';
import { quantitiesEqual } from './quantity.js';
import { applyServerDefaults } from './server-defaults.js';

export interface Difference {
  /** JSON pointer (RFC 6901); array indexes are those of the live object (see README). */
  path: string;
  /** The declared value; null when the desired object does not declare the field. */
  desired: unknown;
  /** The live value; null when the live object does not have the field. */
  live: unknown;
  /**
   * Other field managers that own the live value here (from managedFields), sorted; present only
   * when there are some. The agent uses it to name who keeps rewriting a field it heals.
   */
  liveManagers?: string[];
}

export interface DiffResult {
  inSync: boolean;
  differences: Difference[];
}

export interface DiffOptions {
  /** Argo CD ignoreDifferences rules; contract-parsed rules or their input form (defaults optional). */
  ignoreRules?: readonly IgnoreRuleInput[];
  /** The field manager that applies the desired object (server-side apply); default `flotilla`. */
  manager?: string;
  /** Managers whose fields are never drift, e.g. an autoscaler that owns `spec.replicas`. */
  yieldToManagers?: string[];
  /**
   * The object is written with field validation off (Argo CD's `Validate=false`, the API's
   * `fieldValidation=Ignore`): the server dropped the fields its schema does not declare, so once
   * the manager has written the object, a declared field the live object lacks is not drift.
   */
  unknownFieldsDropped?: boolean;
}

export const DEFAULT_MANAGER = 'flotilla';

/**
 * Compares what a manifest declares with the live object, the way server-side apply sees it:
 * only declared fields count, plus the fields the applying manager owns but no longer declares
 * (applying would remove them). Throws DiffError for unusable input (a bad ignore rule).
 */
export function diffObjects(desired: unknown, live: unknown, opts: DiffOptions = {}): DiffResult {
  if (!isPlainObject(desired)) {
    throw new DiffError('invalid-object', 'expected a Kubernetes object (a mapping)', 'desired');
  }
  if (live !== null && live !== undefined && !isPlainObject(live)) {
    throw new DiffError('invalid-object', 'expected a Kubernetes object (a mapping) or nothing', 'live');
  }
  const rules = compileIgnoreRules(opts.ignoreRules);
  const id = identityOf(desired, live);
  const matched = rules.filter((r) => r.matches(id));

  const declared = normalizeObject(desired, { defaults: false }) as Record<string, unknown>;
  for (const r of matched) removePaths(declared, r.pathsIn(declared));
  if (!isPlainObject(live)) {
    return { inSync: false, differences: [{ path: '', desired: declared, live: null }] };
  }
  const liveN = normalizeObject(live) as Record<string, unknown>;
  for (const r of matched) removePaths(liveN, r.pathsIn(liveN));
  // Reported live values come from the object as read, without the defaults filled in to compare.
  const liveAsRead = normalizeObject(live, { defaults: false }) as Record<string, unknown>;
  for (const r of matched) removePaths(liveAsRead, r.pathsIn(liveAsRead));
  if (id.kind === 'ClusterRole' && isPlainObject(declared['aggregationRule'])) {
    // The aggregation controller owns an aggregated ClusterRole's rules.
    delete declared['rules'];
    delete liveN['rules'];
  }
  const defaulted = structuredClone(declared);
  applyServerDefaults(defaulted);

  const manager = opts.manager ?? DEFAULT_MANAGER;
  const entries = managedFieldsOf(live);
  const isApplier = (e: ManagedFieldsEntry): boolean =>
    e.manager === manager && e.operation === 'Apply' && e.subresource === '';
  const yielded = new Set([...(opts.yieldToManagers ?? []), ...matched.flatMap((r) => r.managers)]);
  const others = entries
    .filter((e) => !isApplier(e))
    .map((e) => ({ manager: e.manager, nodes: ownedNodes(id.kind, e, liveN) }));
  const othersOwn = others.flatMap((o) => o.nodes);
  const yieldedOwn = others.filter((o) => yielded.has(o.manager)).flatMap((o) => o.nodes);

  const ctx: Walk = {
    kind: id.kind,
    out: [],
    missingIsDropped: opts.unknownFieldsDropped === true && entries.some((e) => e.manager === manager),
  };
  compareDeclared(ctx, declared, defaulted, liveN, []);
  const applierSets = entries.filter(isApplier).map((e) => e.fields);
  if (applierSets.length > 0) {
    const removals: Found[] = [];
    for (const fields of applierSets)
      findRemovals({ kind: id.kind, out: removals }, fields, liveN, declared, []);
    // A field another manager co-owns survives the apply, so its removal is not drift.
    ctx.out.push(...removals.filter((r) => !covers(othersOwn, r.path)));
  } else {
    // Never applied server-side by this manager: kubectl's last-applied-configuration, when
    // present, says which fields the previous apply set (a client-side three-way diff).
    const lastApplied = lastAppliedFieldSet(id.kind, live);
    if (lastApplied) findRemovals(ctx, lastApplied, liveN, declared, []);
  }

  const differences = report(
    ctx.out.filter((d) => !isOwned(yieldedOwn, d)),
    liveAsRead,
    // The applier's own Update entry (a client-side apply's, a replace's) names no one else.
    others.filter((o) => o.manager !== manager),
  );
  return { inSync: differences.length === 0, differences };
}

interface Found {
  path: PathSegment[];
  desired: unknown;
  live: unknown;
  /** A list element only the manifest has: its path indexes the desired list, not the live one. */
  desiredOnly?: true;
}

/**
 * Sorted, one per path, with the live value as read and the other managers that own it.
 */
function report(
  found: readonly Found[],
  liveAsRead: unknown,
  others: readonly { manager: string; nodes: OwnedNode[] }[],
): Difference[] {
  const seen = new Set<string>();
  return [...found]
    .sort((a, b) => comparePaths(a.path, b.path))
    .flatMap((d) => {
      const path = formatPointer(d.path);
      if (seen.has(path)) return [];
      seen.add(path);
      const difference: Difference = {
        path,
        desired: d.desired ?? null,
        live: d.desiredOnly ? null : (getAt(liveAsRead, d.path) ?? d.live ?? null),
      };
      const managers = (d.desiredOnly ? [] : others)
        .filter((o) => covers(o.nodes, d.path) || o.nodes.some((n) => isPrefix(d.path, n.path)))
        .map((o) => o.manager);
      if (managers.length > 0) difference.liveManagers = [...new Set(managers)].sort();
      return [difference];
    });
}

/** Whether owned nodes cover a difference; an element only the manifest has is covered only by a whole owned list. */
function isOwned(nodes: readonly OwnedNode[], d: Found): boolean {
  if (!d.desiredOnly) return covers(nodes, d.path);
  const list = d.path.slice(0, -1);
  return nodes.some((n) => n.whole && isPrefix(n.path, list));
}

interface Walk {
  kind: string;
  out: Found[];
  /** A declared field the live object lacks was dropped by the server (see `unknownFieldsDropped`). */
  missingIsDropped?: boolean;
}

/**
 * Walks what the manifest declares (`declared`, as written) beside the same with server defaults
 * (`defaulted`, index-aligned with `declared`), looking each field up in the live object.
 */
function compareDeclared(
  ctx: Walk,
  declared: unknown,
  defaulted: unknown,
  live: unknown,
  path: PathSegment[],
): void {
  if (live === undefined && ctx.missingIsDropped && path.length > 0) return;
  if (isPlainObject(declared)) {
    if (comparesWhole(ctx.kind, path)) {
      if (!sameValue(defaulted, live, path)) ctx.out.push({ path, desired: declared, live });
      return;
    }
    if (live !== undefined && !isPlainObject(live)) {
      ctx.out.push({ path, desired: declared, live });
      return;
    }
    const liveMap = live ?? {};
    const defaultedMap = isPlainObject(defaulted) ? defaulted : {};
    for (const key of Object.keys(declared)) {
      compareDeclared(ctx, declared[key], defaultedMap[key], liveMap[key], [...path, key]);
    }
    return;
  }
  if (Array.isArray(declared)) {
    if (live === undefined && declared.length === 0) return;
    const liveList = live ?? [];
    if (!Array.isArray(liveList)) {
      ctx.out.push({ path, desired: declared, live });
      return;
    }
    const defaultedList = Array.isArray(defaulted) ? defaulted : declared;
    compareList(ctx, declared, defaultedList, liveList, path);
    return;
  }
  // Cluster-scoped objects drop a manifest's namespace; a namespaced one always has it.
  if (live === undefined && path.length === 2 && path[0] === 'metadata' && path[1] === 'namespace') return;
  // An empty string in a struct field is no value at all once Kubernetes' Go types serialise it
  // (`omitempty`): Helm's `clusterIP: ""` leaves the allocated IP alone. Map values keep it.
  if (declared === '' && !isStringMapEntry(path)) return;
  if (!sameValue(defaulted, live, path)) ctx.out.push({ path, desired: declared, live });
}

function compareList(
  ctx: Walk,
  declared: unknown[],
  defaulted: unknown[],
  live: unknown[],
  path: PathSegment[],
): void {
  const schema = listSchemaOf(ctx.kind, path);
  if (schema.type === 'map') {
    const desiredKeys = defaulted.map((el) => mergeKeyOf(el, schema));
    const liveKeys = live.map((el) => mergeKeyOf(el, schema));
    if (isUniqueKeys(desiredKeys) && isUniqueKeys(liveKeys)) {
      declared.forEach((el, i) => {
        const j = liveKeys.indexOf(desiredKeys[i] ?? '');
        if (j < 0) ctx.out.push({ path: [...path, i], desired: el, live: null, desiredOnly: true });
        else compareDeclared(ctx, el, defaulted[i], live[j], [...path, j]);
      });
      return;
    }
  }
  if (schema.type === 'set') {
    declared.forEach((el, i) => {
      if (!live.some((l) => sameValue(defaulted[i], l, [...path, i]))) {
        ctx.out.push({ path: [...path, i], desired: el, live: null, desiredOnly: true });
      }
    });
    return;
  }
  // Positional (atomic) lists: server-side apply replaces them whole. When the lengths agree the
  // elements are compared one by one, so that undeclared fields inside them (CRD defaults) are not
  // drift and the difference points at the element that changed.
  if (declared.length === live.length) {
    declared.forEach((el, i) => compareDeclared(ctx, el, defaulted[i], live[i], [...path, i]));
  } else if (!sameValue(defaulted, live, path)) {
    ctx.out.push({ path, desired: declared, live });
  }
}

function isUniqueKeys(keys: (string | undefined)[]): keys is string[] {
  return keys.every((k) => k !== undefined) && new Set(keys).size === keys.length;
}

/**
 * Fields in the applier's managedFields set that the manifest no longer declares: the next apply
 * removes them (a whole element or key when the applier owns it, else only the owned fields in it).
 */
function findRemovals(
  ctx: Walk,
  fields: Record<string, unknown>,
  live: unknown,
  declared: unknown,
  path: PathSegment[],
): void {
  for (const step of fieldSteps(ctx.kind, fields, live, path)) {
    if (step.segment === undefined) continue;
    const childPath = [...path, step.segment];
    const childLive = (live as Record<string | number, unknown>)[step.segment];
    const childDeclared = declaredChild(ctx.kind, step.key, step.segment, declared, path);
    const keys = Object.keys(step.child);
    if (childDeclared === undefined) {
      if (keys.length === 0 || keys.includes('.'))
        ctx.out.push({ path: childPath, desired: null, live: childLive });
      else findRemovals(ctx, step.child, childLive, undefined, childPath);
    } else if (keys.length > 0) {
      findRemovals(ctx, step.child, childLive, childDeclared, childPath);
    }
  }
}

function declaredChild(
  kind: string,
  key: string,
  segment: PathSegment,
  declared: unknown,
  path: PathSegment[],
): unknown {
  if (key.startsWith('f:')) return isPlainObject(declared) ? declared[segment as string] : undefined;
  if (!Array.isArray(declared)) return undefined;
  if (key.startsWith('i:')) return declared[Number(key.slice(2))];
  let parsed: unknown;
  try {
    parsed = JSON.parse(key.slice(2));
  } catch {
    return undefined;
  }
  if (key.startsWith('v:')) return declared.find((v) => JSON.stringify(v) === JSON.stringify(parsed));
  if (!isPlainObject(parsed)) return undefined;
  const schema = listSchemaOf(kind, path);
  const defaults = schema.type === 'map' ? schema.keyDefaults : {};
  return declared.find((el) => matchesKey(el, parsed, defaults));
}

/** Maps from string to string, whose values are kept even when empty. */
const STRING_MAPS = new Set([
  'labels',
  'annotations',
  'data',
  'stringData',
  'binaryData',
  'matchLabels',
  'nodeSelector',
]);

function isStringMapEntry(path: PathSegment[]): boolean {
  const parent = path[path.length - 2];
  return (
    typeof parent === 'string' && (STRING_MAPS.has(parent) || (parent === 'selector' && path.length === 3))
  );
}

/** Absent, null, "", {} and [] all mean "nothing here" once Kubernetes has serialised an object. */
function isEmpty(v: unknown): boolean {
  if (v === undefined || v === null || v === '') return true;
  if (Array.isArray(v)) return v.length === 0;
  return isPlainObject(v) && Object.keys(v).length === 0;
}

/** Semantic equality: null ≡ {} ≡ [] ≡ absent, canonical quantities, int-or-string ports. */
function sameValue(a: unknown, b: unknown, path: PathSegment[]): boolean {
  if (a === b) return true;
  if (isEmpty(a) && isEmpty(b)) return true;
  if (Array.isArray(a) && Array.isArray(b)) {
    return a.length === b.length && a.every((x, i) => sameValue(x, b[i], [...path, i]));
  }
  if (isPlainObject(a) && isPlainObject(b)) {
    const keys = new Set([...Object.keys(a), ...Object.keys(b)]);
    return [...keys].every((k) => sameValue(a[k], b[k], [...path, k]));
  }
  if (isQuantityField(path) && quantitiesEqual(a, b)) return true;
  if (isIntOrStringField(path) && (typeof a === 'number' || typeof b === 'number')) {
    return String(a) === String(b);
  }
  return false;
}
