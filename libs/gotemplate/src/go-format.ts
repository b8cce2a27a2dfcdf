/**
 * Go's `fmt` rendering of the values a template or a generator handles, so that what Flotilla
 * prints matches what Argo CD prints. Values are JSON-like; a JS `number` stands for Go's float64
 * (every number decoded from JSON or YAML is one), a `bigint` for Go's int (template literals,
 * `len`, sprig arithmetic).
 */

/** `fmt.Sprint(v)` / `%v`: floats in shortest `%g` form (`1e+06`), maps as `map[k:v]` with sorted keys. */
export function formatValue(value: unknown): string {
  if (value === undefined || value === null) return '<nil>';
  if (typeof value === 'string') return value;
  if (typeof value === 'bigint') return value.toString();
  if (typeof value === 'number') return formatFloat(value);
  if (typeof value === 'boolean') return value ? 'true' : 'false';
  if (Array.isArray(value)) return `[${value.map(formatValue).join(' ')}]`;
  if (typeof value === 'object') {
    const obj = value as Record<string, unknown>;
    const parts = Object.keys(obj)
      .sort()
      .map((k) => `${k}:${formatValue(obj[k])}`);
    return `map[${parts.join(' ')}]`;
  }
  return typeof value === 'function' ? '<func>' : '<unknown>';
}

/** strconv.FormatFloat(f, 'g', -1, 64): shortest digits, exponent form when the exponent is < -4 or >= 6. */
export function formatFloat(f: number): string {
  if (Number.isNaN(f)) return 'NaN';
  if (f === Infinity) return '+Inf';
  if (f === -Infinity) return '-Inf';
  if (f === 0) return Object.is(f, -0) ? '-0' : '0';
  const [mantissa = '0', expText = '0'] = f.toExponential().split('e');
  const exp = Number(expText);
  if (exp < -4 || exp >= 6) return goExponent(mantissa, exp);
  return String(f);
}

function goExponent(mantissa: string, exp: number): string {
  const abs = Math.abs(exp);
  return `${mantissa}e${exp < 0 ? '-' : '+'}${abs < 10 ? `0${abs}` : abs}`;
}

/** Go's `%q` for a string: double-quoted with Go escapes (non-printable runes escaped). */
export function quoteGo(s: string): string {
  let out = '"';
  for (const ch of s) {
    const cp = ch.codePointAt(0) ?? 0;
    switch (ch) {
      case '"':
        out += '\\"';
        continue;
      case '\\':
        out += '\\\\';
        continue;
      case '\n':
        out += '\\n';
        continue;
      case '\r':
        out += '\\r';
        continue;
      case '\t':
        out += '\\t';
        continue;
      case '\x07':
        out += '\\a';
        continue;
      case '\b':
        out += '\\b';
        continue;
      case '\f':
        out += '\\f';
        continue;
      case '\v':
        out += '\\v';
        continue;
      default:
        break;
    }
    if (cp < 0x20 || cp === 0x7f) out += `\\x${cp.toString(16).padStart(2, '0')}`;
    else out += ch;
  }
  return `${out}"`;
}
