const converted = new WeakMap<object, unknown>();

/**
 * A JSON object as CEL sees it in Kubernetes: whole numbers are `int` (bigint in cel-js), others
 * `double`. Converted once per object, because one object meets many policies.
 */
export function toCelValue(value: unknown): unknown {
  if (typeof value === 'number') return Number.isInteger(value) ? BigInt(value) : value;
  if (typeof value !== 'object' || value === null) return value;
  const known = converted.get(value);
  if (known !== undefined) return known;
  const out = Array.isArray(value)
    ? value.map(toCelValue)
    : Object.fromEntries(Object.entries(value).map(([k, v]) => [k, toCelValue(v)]));
  converted.set(value, out);
  return out;
}
