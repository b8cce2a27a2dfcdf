import { badRequest } from '../errors.js';
import { clone, deepEqual, isObject, type JsonObject, str } from '../json.js';
import { type FieldSchema } from '../fieldpath/field-schema.js';

/**
 * Strategic merge patch for built-in kinds: maps merge, lists with a patch merge key merge by key,
 * primitive merge lists (finalizers) take the union, other lists are replaced. Directives:
 * `$patch: replace|delete|merge`, `$retainKeys`, `$setElementOrder/<field>`,
 * `$deleteFromPrimitiveList/<field>`.
 */
export function strategicMergePatch(original: unknown, patch: unknown, schema: FieldSchema): unknown {
  return smp(original, patch, schema, []);
}

function stripDirectives(v: unknown): unknown {
  if (Array.isArray(v))
    return v
      .filter((x) => !(isObject(x) && x['$patch'] !== undefined && Object.keys(x).length === 1))
      .map(stripDirectives);
  if (isObject(v)) {
    const out: JsonObject = {};
    for (const [k, x] of Object.entries(v)) if (!k.startsWith('$')) out[k] = stripDirectives(x);
    return out;
  }
  return v;
}

function smp(original: unknown, patch: unknown, schema: FieldSchema, names: string[]): unknown {
  if (!isObject(patch)) return clone(patch);
  const directive = patch['$patch'];
  if (directive === 'replace') return stripDirectives(patch);
  if (directive === 'delete') return undefined;
  if (directive !== undefined && directive !== 'merge')
    throw badRequest(`Unknown patch directive: ${str(directive)}`);
  if (schema.atomic(names) && names.length) return stripDirectives(patch);
  const out: JsonObject = isObject(original) ? clone(original) : {};
  const orders: [string, unknown[]][] = [];
  for (const [k, v] of Object.entries(patch)) {
    if (k === '$patch' || k === '$retainKeys') continue;
    if (k.startsWith('$setElementOrder/')) {
      if (Array.isArray(v)) orders.push([k.slice('$setElementOrder/'.length), v]);
      continue;
    }
    if (k.startsWith('$deleteFromPrimitiveList/')) {
      const field = k.slice('$deleteFromPrimitiveList/'.length);
      const cur = out[field];
      if (Array.isArray(cur) && Array.isArray(v))
        out[field] = cur.filter((x) => !v.some((d) => deepEqual(d, x)));
      continue;
    }
    if (k.startsWith('$')) continue;
    const path = [...names, k];
    if (v === null) delete out[k];
    else if (Array.isArray(v)) out[k] = mergeList(out[k], v, schema, path);
    else if (isObject(v)) {
      const merged = smp(out[k], v, schema, path);
      if (merged === undefined) delete out[k];
      else out[k] = merged;
    } else out[k] = v;
  }
  const retain = patch['$retainKeys'];
  if (Array.isArray(retain)) for (const k of Object.keys(out)) if (!retain.includes(k)) delete out[k];
  for (const [field, order] of orders) {
    const cur = out[field];
    if (Array.isArray(cur)) out[field] = reorder(cur, order, schema.smpKey([...names, field]));
  }
  return out;
}

function reorder(list: unknown[], order: unknown[], key: string | undefined): unknown[] {
  const id = (x: unknown): unknown => (key && key !== 'primitive' && isObject(x) ? x[key] : x);
  const wanted = order.map(id);
  const ranked = list.map((x, i) => ({ x, i, r: wanted.findIndex((w) => deepEqual(w, id(x))) }));
  // Elements the order does not mention keep their place after the ordered ones.
  ranked.sort((a, b) => (a.r < 0 ? 1e9 + a.i : a.r) - (b.r < 0 ? 1e9 + b.i : b.r));
  return ranked.map((r) => r.x);
}

function mergeList(original: unknown, patch: unknown[], schema: FieldSchema, names: string[]): unknown[] {
  const key = schema.smpKey(names);
  const replaceIdx = patch.findIndex((x) => isObject(x) && x['$patch'] === 'replace');
  if (replaceIdx >= 0 || key === undefined || !Array.isArray(original)) {
    return stripDirectives(patch.filter((_, i) => i !== replaceIdx)) as unknown[];
  }
  let out = clone(original);
  if (key === 'primitive') {
    for (const v of patch) if (!out.some((x) => deepEqual(x, v))) out.push(clone(v));
    return out;
  }
  for (const el of patch) {
    if (!isObject(el)) continue;
    const k = el[key];
    if (el['$patch'] === 'delete') {
      out = out.filter((x) => !(isObject(x) && deepEqual(x[key], k)));
      continue;
    }
    const idx = out.findIndex((x) => isObject(x) && deepEqual(x[key], k));
    if (idx >= 0) out[idx] = smp(out[idx], el, schema, names);
    else out.push(stripDirectives(el));
  }
  return out;
}
