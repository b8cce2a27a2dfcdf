import { type FuncMap, FunctionError, goFunction as fn, lazyFunction } from './exec.js';
import { sprint, sprintf, sprintln } from './go-printf.js';
import { byteLength, goTypeName, isMap, isTrue } from './values.js';

type Kind = 'bool' | 'int' | 'float' | 'string' | 'other';

function basicKind(v: unknown): Kind {
  if (typeof v === 'boolean') return 'bool';
  if (typeof v === 'bigint') return 'int';
  if (typeof v === 'number') return 'float';
  if (typeof v === 'string') return 'string';
  return 'other';
}

const valid = (v: unknown): boolean => v !== undefined;

/** text/template's eq: true when arg1 equals any later argument; mixing basic kinds is an error. */
function eq(a: unknown, ...others: unknown[]): boolean {
  if (others.length === 0) throw new FunctionError('missing argument for comparison');
  const k1 = basicKind(a);
  for (const b of others) {
    const k2 = basicKind(b);
    let truth: boolean;
    if (k1 !== k2) {
      if (valid(a) && valid(b) && a !== null && b !== null)
        throw new FunctionError('incompatible types for comparison');
      truth = false;
      if ((a === null || a === undefined) && (b === null || b === undefined)) truth = true;
    } else if (k1 === 'other') {
      if (Array.isArray(a) || Array.isArray(b) || isMap(a) || isMap(b)) {
        throw new FunctionError(`non-comparable type ${goTypeName(Array.isArray(a) || isMap(a) ? a : b)}`);
      }
      truth = (a ?? null) === (b ?? null);
    } else truth = a === b;
    if (truth) return true;
  }
  return false;
}

function lt(a: unknown, b: unknown): boolean {
  const k1 = basicKind(a);
  const k2 = basicKind(b);
  if (k1 === 'other' || k1 === 'bool') throw new FunctionError('invalid type for comparison');
  if (k1 !== k2) throw new FunctionError('incompatible types for comparison');
  return (a as string | number | bigint) < (b as string | number | bigint);
}

function indexOne(item: unknown, key: unknown): unknown {
  if (item === null || item === undefined) throw new FunctionError('index of untyped nil');
  if (isMap(item)) {
    if (typeof key !== 'string')
      throw new FunctionError(`value has type ${goTypeName(key)}; should be string`);
    return Object.hasOwn(item, key) ? item[key] : null;
  }
  if (Array.isArray(item) || typeof item === 'string') {
    if (typeof key !== 'bigint')
      throw new FunctionError(`cannot index slice/array with type ${goTypeName(key)}`);
    const len = typeof item === 'string' ? byteLength(item) : item.length;
    if (key < 0n || key >= BigInt(len)) throw new FunctionError(`index out of range: ${key}`);
    return typeof item === 'string' ? BigInt(Buffer.from(item, 'utf8')[Number(key)] ?? 0) : item[Number(key)];
  }
  throw new FunctionError(`can't index item of type ${goTypeName(item)}`);
}

function htmlEscape(s: string): string {
  return s.replace(/[&'<>"\0]/g, (c) =>
    c === '&'
      ? '&amp;'
      : c === "'"
        ? '&#39;'
        : c === '<'
          ? '&lt;'
          : c === '>'
            ? '&gt;'
            : c === '"'
              ? '&#34;'
              : '\uFFFD',
  );
}

function jsEscape(s: string): string {
  let out = '';
  for (const c of s) {
    const cp = c.codePointAt(0) ?? 0;
    if (c === '\\') out += '\\\\';
    else if (c === "'") out += "\\'";
    else if (c === '"') out += '\\"';
    else if (c === '<') out += '\\u003C';
    else if (c === '>') out += '\\u003E';
    else if (c === '&') out += '\\u0026';
    else if (c === '=') out += '\\u003D';
    else if (cp < 0x20) out += `\\u${cp.toString(16).toUpperCase().padStart(4, '0')}`;
    else out += c;
  }
  return out;
}

/** Go's query escaping (url.QueryEscape): spaces become '+'. */
export function queryEscape(s: string): string {
  return encodeURIComponent(s)
    .replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`)
    .replace(/%20/g, '+')
    .replace(/%7E/g, '~');
}

/** The functions every Go template has. */
export const BUILTINS: FuncMap = {
  and: lazyFunction((args) => {
    let v: unknown;
    for (const a of args) {
      v = a();
      if (!isTrue(v)) return v;
    }
    return v;
  }),
  or: lazyFunction((args) => {
    let v: unknown;
    for (const a of args) {
      v = a();
      if (isTrue(v)) return v;
    }
    return v;
  }),
  not: fn(['any'], (v) => !isTrue(v)),
  len: fn(['any'], (v) => {
    if (v === null || v === undefined) throw new FunctionError('len of nil pointer');
    if (typeof v === 'string') return BigInt(byteLength(v));
    if (Array.isArray(v)) return BigInt(v.length);
    if (isMap(v)) return BigInt(Object.keys(v).length);
    throw new FunctionError(`len of type ${goTypeName(v)}`);
  }),
  index: fn(['any'], (item, ...keys) => keys.reduce((acc, k) => indexOne(acc, k), item), 'any'),
  slice: fn(
    ['any'],
    (item, ...idx) => {
      if (typeof item !== 'string' && !Array.isArray(item))
        throw new FunctionError(`can't slice item of type ${goTypeName(item)}`);
      if (idx.some((i) => typeof i !== 'bigint'))
        throw new FunctionError('cannot index slice/array with nil');
      const len = typeof item === 'string' ? byteLength(item) : item.length;
      const [from = 0n, to = BigInt(len)] = idx as bigint[];
      if (from < 0n || to > BigInt(len) || from > to) throw new FunctionError(`index out of range: ${from}`);
      if (typeof item === 'string')
        return Buffer.from(item, 'utf8').subarray(Number(from), Number(to)).toString('utf8');
      return (item as unknown[]).slice(Number(from), Number(to));
    },
    'any',
  ),
  print: fn([], (...a) => sprint(a), 'any'),
  println: fn([], (...a) => sprintln(a), 'any'),
  printf: fn(['string'], (f, ...a) => sprintf(f as string, a), 'any'),
  eq: fn(['any'], (a, ...b) => eq(a, ...b), 'any'),
  ne: fn(['any', 'any'], (a, b) => !eq(a, b)),
  lt: fn(['any', 'any'], (a, b) => lt(a, b)),
  le: fn(['any', 'any'], (a, b) => lt(a, b) || eq(a, b)),
  gt: fn(['any', 'any'], (a, b) => !lt(a, b) && !eq(a, b)),
  ge: fn(['any', 'any'], (a, b) => !lt(a, b)),
  html: fn([], (...a) => htmlEscape(sprint(a)), 'any'),
  js: fn([], (...a) => jsEscape(sprint(a)), 'any'),
  urlquery: fn([], (...a) => queryEscape(sprint(a)), 'any'),
};
