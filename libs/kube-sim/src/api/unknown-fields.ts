import { isObject, type JsonObject } from '../json.js';

/**
 * What the server does with fields a kind's schema does not declare (the `fieldValidation` query
 * parameter): `Strict` refuses the write, `Warn` (the default) drops them and says so in a
 * `Warning` header, `Ignore` drops them silently.
 */
export type FieldValidation = 'Strict' | 'Warn' | 'Ignore';

export const FIELD_VALIDATIONS: readonly FieldValidation[] = ['Strict', 'Warn', 'Ignore'];

type Schema = Record<string, unknown>;

/**
 * Removes from `obj`, in place, every field its structural schema (a CRD version's
 * `openAPIV3Schema`) does not declare, and returns their paths (`spec.replicaz`,
 * `spec.items[0].colour`) in document order. This is the apiserver's pruning of custom resources:
 * `x-kubernetes-preserve-unknown-fields` keeps what is under it, `additionalProperties` declares a
 * map, `x-kubernetes-embedded-resource` admits apiVersion, kind and metadata, and the object's own
 * apiVersion, kind and metadata are never pruned (metadata has its own, fixed schema).
 */
export function pruneUnknownFields(obj: JsonObject, schema: Schema): string[] {
  const found: string[] = [];
  pruneObject(obj, schema, '', found, true);
  return found;
}

function pruneObject(value: JsonObject, schema: Schema, path: string, found: string[], root: boolean): void {
  const props = isObject(schema['properties']) ? (schema['properties'] as Record<string, Schema>) : undefined;
  const additional = schema['additionalProperties'];
  const preserve = schema['x-kubernetes-preserve-unknown-fields'] === true;
  const embedded = root || schema['x-kubernetes-embedded-resource'] === true;
  for (const key of Object.keys(value)) {
    const childPath = path ? `${path}.${key}` : key;
    if (embedded && (key === 'apiVersion' || key === 'kind' || key === 'metadata')) continue;
    const declared = props?.[key] ?? (isObject(additional) ? additional : undefined);
    if (declared) {
      pruneValue(value[key], declared, childPath, found);
      continue;
    }
    if (preserve || additional === true) continue;
    found.push(childPath);
    delete value[key];
  }
}

function pruneValue(value: unknown, schema: Schema, path: string, found: string[]): void {
  if (Array.isArray(value)) {
    const items = schema['items'];
    if (!isObject(items)) return;
    value.forEach((item, i) => pruneValue(item, items, `${path}[${i}]`, found));
    return;
  }
  // A scalar where the schema wants an object is a type error, which validation reports; and
  // int-or-string or a schemaless node has nothing to prune.
  if (isObject(value) && (schema['type'] === 'object' || isObject(schema['properties'])))
    pruneObject(value, schema, path, found, false);
}

/** The apiserver's wording for a refused write (`fieldValidation=Strict`). */
export function strictDecodingMessage(paths: string[]): string {
  return `strict decoding error: ${paths.map((p) => `unknown field "${p}"`).join(', ')}`;
}
