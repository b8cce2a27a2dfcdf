import { DiffError } from './diff-error.js';
import { isPlainObject } from './json-pointer.js';
import { LAST_APPLIED_ANNOTATION } from './last-applied.js';
import { patchStrategyOf } from './patch-strategy.js';

/**
 * The patch `kubectl apply` (client-side) would send: what Argo CD's `ServerSideApply=false` writes.
 * `strategic`: a strategic merge patch (`application/strategic-merge-patch+json`), for the kinds
 * kubectl knows; `merge`: an RFC 7386 JSON merge patch (`application/merge-patch+json`), for the rest
 * (custom resources). `patch` is `{}` when there is nothing to change.
 */
export interface ClientSideApplyPatch {
  type: 'strategic' | 'merge';
  patch: Record<string, unknown>;
}

/**
 * The API groups whose kinds are compiled into kubectl (client-go's scheme): kubectl sends them a
 * strategic merge patch and every other group (CRDs, apiextensions and aggregated APIs included) a
 * JSON merge patch, which is also all a custom resource's endpoint accepts.
 */
const BUILT_IN_GROUPS = new Set([
  '',
  'admissionregistration.k8s.io',
  'apps',
  'authentication.k8s.io',
  'authorization.k8s.io',
  'autoscaling',
  'batch',
  'certificates.k8s.io',
  'coordination.k8s.io',
  'discovery.k8s.io',
  'events.k8s.io',
  'extensions',
  'flowcontrol.apiserver.k8s.io',
  'internal.apiserver.k8s.io',
  'networking.k8s.io',
  'node.k8s.io',
  'policy',
  'rbac.authorization.k8s.io',
  'resource.k8s.io',
  'scheduling.k8s.io',
  'storage.k8s.io',
  'storagemigration.k8s.io',
]);

export function patchTypeOf(apiVersion: string): ClientSideApplyPatch['type'] {
  const slash = apiVersion.indexOf('/');
  return BUILT_IN_GROUPS.has(slash < 0 ? '' : apiVersion.slice(0, slash)) ? 'strategic' : 'merge';
}

/**
 * The object as `kubectl apply` writes it: its `kubectl.kubernetes.io/last-applied-configuration`
 * annotation holds the object itself (without that annotation), as kubectl serialises it — Go's
 * encoding/json: keys sorted, `<`, `>` and `&` escaped, a final newline, and `annotations: {}` when
 * the object had none. Byte for byte what kubectl writes, so a later `kubectl apply` of the same
 * manifest finds nothing to change. Never changes its input.
 */
export function withLastApplied<T extends { metadata?: unknown }>(obj: T): T {
  const copy = structuredClone(obj) as Record<string, unknown>;
  const metadata: Record<string, unknown> = isPlainObject(copy['metadata']) ? copy['metadata'] : {};
  copy['metadata'] = metadata;
  const annotations: Record<string, unknown> = isPlainObject(metadata['annotations'])
    ? { ...metadata['annotations'] }
    : {};
  delete annotations[LAST_APPLIED_ANNOTATION];
  metadata['annotations'] = annotations;
  const text = `${goJson(copy)}\n`;
  metadata['annotations'] = { ...annotations, [LAST_APPLIED_ANNOTATION]: text };
  return copy as T;
}

/**
 * kubectl's three-way patch from `desired` (the manifest) to `live` (undefined: the object does not
 * exist, and kubectl creates `withLastApplied(desired)` instead): fields the previous apply set
 * (the live object's last-applied-configuration) and the manifest no longer declares are deleted;
 * fields the manifest declares are set where live differs; fields others set and the manifest never
 * declared stay. Lists with a merge key (containers by name, ports by containerPort…) are merged
 * element by element in a strategic merge patch, so a container another actor added is kept; other
 * lists, and every list in a JSON merge patch, are replaced whole. Argo CD's ServerSideApply=false.
 */
export function clientSideApplyPatch(desired: unknown, live: unknown): ClientSideApplyPatch {
  if (!isPlainObject(desired) || typeof desired['apiVersion'] !== 'string')
    throw new DiffError('invalid-object', 'expected a Kubernetes object with an apiVersion', 'desired');
  const modified = withLastApplied(desired);
  const original = lastAppliedOf(live) ?? {};
  const current = isPlainObject(live) ? live : {};
  const type = patchTypeOf(desired['apiVersion']);
  if (type === 'merge') {
    const patch = combine(
      onlyNulls(mergeDiff(original, modified)) ?? {},
      withoutNulls(mergeDiff(current, modified)) ?? {},
    );
    return { type, patch: patch as Record<string, unknown> };
  }
  const kind = typeof desired['kind'] === 'string' ? desired['kind'] : '';
  const deletions = strategicDiff(kind, original, modified, [], 'deletions');
  const delta = strategicDiff(kind, current, modified, [], 'delta');
  return { type, patch: combine(deletions, delta) as Record<string, unknown> };
}

/**
 * What the live object's last-applied-configuration annotation says was applied; undefined when it
 * has none (nothing is known to have been applied, so nothing is deleted). One that is not a JSON
 * object is refused, as kubectl refuses it: guessing would delete the wrong fields or none.
 */
function lastAppliedOf(live: unknown): Record<string, unknown> | undefined {
  const metadata = isPlainObject(live) ? live['metadata'] : undefined;
  const annotations = isPlainObject(metadata) ? metadata['annotations'] : undefined;
  const text = isPlainObject(annotations) ? annotations[LAST_APPLIED_ANNOTATION] : undefined;
  if (text === undefined) return undefined;
  let parsed: unknown;
  try {
    parsed = typeof text === 'string' ? JSON.parse(text) : undefined;
  } catch {
    parsed = undefined;
  }
  if (isPlainObject(parsed)) return parsed;
  throw new DiffError(
    'invalid-object',
    'is not the JSON object kubectl writes there, so what was last applied is unknown; remove the annotation and the next apply writes it anew (fields Git dropped before then stay)',
    `live.metadata.annotations["${LAST_APPLIED_ANNOTATION}"]`,
  );
}

/**
 * - `deletions` (original → modified): only what the manifest no longer declares, as `null`,
 *   `{$patch: delete}` list elements and `$deleteFromPrimitiveList`;
 * - `delta` (live → modified): only what the manifest declares and live lacks or has otherwise.
 * As apimachinery's diffMaps with IgnoreChangesAndAdditions / IgnoreDeletions.
 */
type Pass = 'deletions' | 'delta';

function strategicDiff(
  kind: string,
  from: Record<string, unknown>,
  to: Record<string, unknown>,
  path: readonly string[],
  pass: Pass,
): Record<string, unknown> {
  const patch: Record<string, unknown> = {};
  for (const [key, toValue] of Object.entries(to)) {
    const fieldPath = [...path, key];
    const fromValue = from[key];
    if (!Object.hasOwn(from, key) || fromValue === undefined) {
      if (pass === 'delta') patch[key] = structuredClone(toValue);
      continue;
    }
    if (isPlainObject(toValue) && isPlainObject(fromValue)) {
      const child = strategicDiff(kind, fromValue, toValue, fieldPath, pass);
      if (Object.keys(child).length > 0) {
        if (pass === 'delta' && patchStrategyOf(kind, fieldPath).retainKeys)
          child['$retainKeys'] = retainedKeys(toValue);
        patch[key] = child;
      }
      continue;
    }
    if (Array.isArray(toValue) && Array.isArray(fromValue)) {
      diffList(kind, fromValue, toValue, fieldPath, pass, patch, key);
      continue;
    }
    if (pass === 'delta' && !sameJson(fromValue, toValue)) patch[key] = structuredClone(toValue);
  }
  if (pass === 'deletions')
    for (const key of Object.keys(from))
      if (!Object.hasOwn(to, key) && !key.startsWith('$')) patch[key] = null;
  return patch;
}

function retainedKeys(value: Record<string, unknown>): string[] {
  return Object.keys(value)
    .filter((k) => value[k] !== null)
    .sort();
}

function diffList(
  kind: string,
  from: unknown[],
  to: unknown[],
  path: readonly string[],
  pass: Pass,
  patch: Record<string, unknown>,
  key: string,
): void {
  const strategy = patchStrategyOf(kind, path);
  if (strategy.mergeKey === 'primitive' && to.every(isScalar) && from.every(isScalar)) {
    if (pass === 'delta') {
      const added = to.filter((v) => !from.some((f) => sameJson(f, v)));
      if (added.length > 0) patch[key] = added;
      if (!sameJson(from, to)) patch[`$setElementOrder/${key}`] = [...to];
    } else {
      const removed = from.filter((v) => !to.some((t) => sameJson(t, v)));
      if (removed.length > 0) {
        patch[`$deleteFromPrimitiveList/${key}`] = removed;
        patch[`$setElementOrder/${key}`] = [...to];
      }
    }
    return;
  }
  const mergeKey = strategy.mergeKey;
  if (mergeKey && mergeKey !== 'primitive' && keyedBy(mergeKey, to) && keyedBy(mergeKey, from)) {
    const keyOf = (el: unknown): string => JSON.stringify((el as Record<string, unknown>)[mergeKey]);
    const fromByKey = new Map(from.map((el) => [keyOf(el), el as Record<string, unknown>]));
    const toKeys = new Set(to.map(keyOf));
    const elements: Record<string, unknown>[] = [];
    for (const el of to as Record<string, unknown>[]) {
      const was = fromByKey.get(keyOf(el));
      if (!was) {
        if (pass === 'delta') elements.push(structuredClone(el));
        continue;
      }
      const child = strategicDiff(kind, was, el, path, pass);
      if (Object.keys(child).length === 0) continue;
      if (pass === 'delta' && strategy.retainKeys) child['$retainKeys'] = retainedKeys(el);
      elements.push({ [mergeKey]: el[mergeKey], ...child });
    }
    if (pass === 'deletions')
      for (const el of from as Record<string, unknown>[])
        if (!toKeys.has(keyOf(el))) elements.push({ $patch: 'delete', [mergeKey]: el[mergeKey] });
    // apimachinery's isOrderSame: any other length counts as a new order (a sidecar live has and
    // Git does not), so kubectl sends `$setElementOrder` alone then, and so does Flotilla.
    const reordered = pass === 'delta' && !sameOrder(from.map(keyOf), to.map(keyOf));
    if (elements.length > 0 || reordered) {
      if (elements.length > 0) patch[key] = elements;
      patch[`$setElementOrder/${key}`] = (to as Record<string, unknown>[]).map((el) => ({
        [mergeKey]: el[mergeKey],
      }));
    }
    return;
  }
  // Lists without a merge strategy (or whose elements lack the key) are replaced whole.
  if (pass === 'delta' && !sameJson(from, to)) patch[key] = structuredClone(to);
}

function keyedBy(mergeKey: string, list: unknown[]): boolean {
  const seen = new Set<string>();
  for (const el of list) {
    if (!isPlainObject(el) || el[mergeKey] === undefined || el[mergeKey] === null) return false;
    const k = JSON.stringify(el[mergeKey]);
    if (seen.has(k)) return false;
    seen.add(k);
  }
  return true;
}

/**
 * Puts the delta over the deletions. They never touch the same field (a field is either declared or
 * not), except the maps and lists above them, which merge: keyed lists by concatenating the delete
 * directives and the changed elements, as apimachinery's mergeMap does.
 */
function combine(a: unknown, b: unknown): unknown {
  if (isPlainObject(a) && isPlainObject(b)) {
    const out: Record<string, unknown> = { ...a };
    for (const [k, v] of Object.entries(b)) out[k] = Object.hasOwn(out, k) ? combine(out[k], v) : v;
    return out;
  }
  if (Array.isArray(a) && Array.isArray(b)) {
    // `$setElementOrder` lists are the same on both sides; element lists are disjoint.
    if (sameJson(a, b)) return a;
    return [...(a as unknown[]), ...(b as unknown[])];
  }
  return b;
}

/** RFC 7386's patch from `from` to `to` (jsonpatch.CreateMergePatch): removed keys as null. */
function mergeDiff(from: unknown, to: unknown): unknown {
  if (!isPlainObject(from) || !isPlainObject(to)) return structuredClone(to);
  const patch: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(to)) {
    if (!Object.hasOwn(from, k)) patch[k] = structuredClone(v);
    else if (isPlainObject(v) && isPlainObject(from[k])) {
      const child = mergeDiff(from[k], v) as Record<string, unknown>;
      if (Object.keys(child).length > 0) patch[k] = child;
    } else if (!sameJson(from[k], v)) patch[k] = structuredClone(v);
  }
  for (const k of Object.keys(from)) if (!Object.hasOwn(to, k)) patch[k] = null;
  return patch;
}

/** The deletions of a merge patch only; undefined when nothing is left. */
function onlyNulls(patch: unknown): Record<string, unknown> | undefined {
  if (!isPlainObject(patch)) return undefined;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(patch)) {
    if (v === null) out[k] = null;
    else if (isPlainObject(v)) {
      const child = onlyNulls(v);
      if (child) out[k] = child;
    }
  }
  return Object.keys(out).length > 0 ? out : undefined;
}

/** The additions and changes of a merge patch only; undefined when nothing is left. */
function withoutNulls(patch: unknown): Record<string, unknown> | undefined {
  if (!isPlainObject(patch)) return undefined;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(patch)) {
    if (v === null) continue;
    if (isPlainObject(v) && Object.keys(v).length > 0) {
      const child = withoutNulls(v);
      if (child) out[k] = child;
    } else out[k] = v;
  }
  return Object.keys(out).length > 0 ? out : undefined;
}

function isScalar(v: unknown): boolean {
  return v === null || typeof v !== 'object';
}

function sameOrder(a: readonly string[], b: readonly string[]): boolean {
  return a.length === b.length && a.every((k, i) => k === b[i]);
}

function sameJson(a: unknown, b: unknown): boolean {
  return goJson(a) === goJson(b);
}

/**
 * JSON as Go's encoding/json writes a map: keys sorted, HTML-significant characters and the two
 * JavaScript line separators escaped, `\b` and `\f` as `\u0008` and `\u000c`.
 */
export function goJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map((v) => goJson(v)).join(',')}]`;
  if (isPlainObject(value)) {
    const keys = Object.keys(value)
      .filter((k) => value[k] !== undefined)
      .sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${keys.map((k) => `${goString(k)}:${goJson(value[k])}`).join(',')}}`;
  }
  if (typeof value === 'string') return goString(value);
  return JSON.stringify(value ?? null);
}

const GO_ESCAPES: Readonly<Record<string, string>> = {
  '\\\\': '\\\\',
  '\\b': '\\u0008',
  '\\f': '\\u000c',
  '<': '\\u003c',
  '>': '\\u003e',
  '&': '\\u0026',
  '\u2028': '\\u2028',
  '\u2029': '\\u2029',
};

function goString(s: string): string {
  // An escaped backslash is matched first, so the `b` of `\\b` is never taken for an escape.
  return JSON.stringify(s).replace(/\\\\|\\b|\\f|[<>&\u2028\u2029]/g, (m) => GO_ESCAPES[m] ?? m);
}
