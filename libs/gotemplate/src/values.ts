/**
 * How Go values map to JS here: `undefined` is Go's "no value" (a missing map key), `null` is nil,
 * `bigint` is int, `number` is float64, plain objects are map[string]interface{}, arrays are slices.
 */

export function isMap(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Go's type name of a value, for error messages. */
export function goTypeName(v: unknown): string {
  if (v === undefined) return 'invalid';
  if (v === null) return 'interface {}';
  if (typeof v === 'string') return 'string';
  if (typeof v === 'bigint') return 'int';
  if (typeof v === 'number') return 'float64';
  if (typeof v === 'boolean') return 'bool';
  if (Array.isArray(v)) return '[]interface {}';
  return 'map[string]interface {}';
}

/** text/template's notion of truth: false, 0, nil, empty string/slice/map and "no value" are false. */
export function isTrue(v: unknown): boolean {
  if (v === undefined || v === null) return false;
  if (typeof v === 'boolean') return v;
  if (typeof v === 'string') return v.length > 0;
  if (typeof v === 'bigint') return v !== 0n;
  if (typeof v === 'number') return v !== 0;
  if (Array.isArray(v)) return v.length > 0;
  if (isMap(v)) return Object.keys(v).length > 0;
  return true;
}

/** Length in bytes, as Go's len of a string. */
export function byteLength(s: string): number {
  return Buffer.byteLength(s, 'utf8');
}
