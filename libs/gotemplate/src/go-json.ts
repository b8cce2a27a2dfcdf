import { isMap } from './values.js';

/**
 * encoding/json's Marshal of template values: sorted map keys, ints as integers, and — unless
 * `escapeHtml` is false — `<`, `>`, `&`, U+2028 and U+2029 escaped as Go does.
 */
export function goJson(value: unknown, opts: { indent?: string; escapeHtml?: boolean } = {}): string {
  const indent = opts.indent ?? '';
  const escapeHtml = opts.escapeHtml ?? true;
  const str = (s: string): string => {
    let out = JSON.stringify(s);
    if (escapeHtml) out = out.replace(/[<>&]/g, (c) => `\\u00${c.charCodeAt(0).toString(16)}`);
    return out.replace(/\u2028/g, '\\u2028').replace(/\u2029/g, '\\u2029');
  };
  const walk = (v: unknown, depth: number): string => {
    if (v === undefined || v === null) return 'null';
    if (typeof v === 'string') return str(v);
    if (typeof v === 'bigint') return v.toString();
    if (typeof v === 'number') {
      if (!Number.isFinite(v)) throw new Error(`json: unsupported value: ${v}`);
      return JSON.stringify(v);
    }
    if (typeof v === 'boolean') return v ? 'true' : 'false';
    const nl = indent ? `\n${indent.repeat(depth + 1)}` : '';
    const close = indent ? `\n${indent.repeat(depth)}` : '';
    const sep = indent ? ': ' : ':';
    if (Array.isArray(v)) {
      if (v.length === 0) return '[]';
      return `[${v.map((e) => nl + walk(e, depth + 1)).join(',')}${close}]`;
    }
    if (isMap(v)) {
      const keys = Object.keys(v).sort();
      if (keys.length === 0) return '{}';
      return `{${keys.map((k) => `${nl}${str(k)}${sep}${walk(v[k], depth + 1)}`).join(',')}${close}}`;
    }
    throw new Error(`json: unsupported type`);
  };
  return walk(value, 0);
}

/** JSON text to template values: integers stay float64 (JS numbers), as encoding/json decodes into interface{}. */
export function parseJson(text: string): unknown {
  return JSON.parse(text) as unknown;
}
