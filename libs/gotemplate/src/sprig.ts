import { createHash } from 'node:crypto';
import { posix } from 'node:path';
import { type FuncMap, FunctionError, type GoFunction, goFunction as fn } from './exec.js';
import { formatValue, quoteGo } from './go-format.js';
import { goJson, parseJson } from './go-json.js';
import { sprint } from './go-printf.js';
import { compileGoRegexp, expandGoReplacement } from './go-regexp.js';
import { goTypeName, isMap, isTrue } from './values.js';

/**
 * The Sprig functions (Masterminds/sprig v3) templates commonly use, minus the ones Argo CD removes
 * (env, expandenv, getHostByName) and the non-deterministic ones (now, date, rand*, uuid).
 * Argument order follows Sprig: the value being worked on comes last, so it can be piped.
 */

/** sprig's strval: strings as they are, anything else through `%v`. */
export function strval(v: unknown): string {
  return typeof v === 'string' ? v : formatValue(v);
}

/** cast.ToInt64 as sprig uses it: lenient, 0 when it cannot convert. */
export function toInt64(v: unknown): bigint {
  if (typeof v === 'bigint') return v;
  if (typeof v === 'number') return Number.isFinite(v) ? BigInt(Math.trunc(v)) : 0n;
  if (typeof v === 'boolean') return v ? 1n : 0n;
  if (typeof v === 'string') {
    const s = v.trim().replace(/\.0*$/, '');
    try {
      if (/^[+-]?(0[xX][0-9a-fA-F]+|0[bB][01]+|0[oO][0-7]+|\d+)$/.test(s)) {
        const neg = s.startsWith('-');
        const body = s.replace(/^[+-]/, '');
        const n = /^0[0-7]+$/.test(body) ? BigInt(`0o${body.slice(1)}`) : BigInt(body);
        return neg ? -n : n;
      }
    } catch {
      return 0n;
    }
    return 0n;
  }
  return 0n;
}

export function toFloat64(v: unknown): number {
  if (typeof v === 'number') return v;
  if (typeof v === 'bigint') return Number(v);
  if (typeof v === 'boolean') return v ? 1 : 0;
  if (typeof v === 'string') {
    const f = Number(v.trim());
    return v.trim() === '' || Number.isNaN(f) ? 0 : f;
  }
  return 0;
}

function empty(v: unknown): boolean {
  return !isTrue(v);
}

function asList(v: unknown, fn: string): unknown[] {
  if (Array.isArray(v)) return v;
  throw new FunctionError(`Cannot ${fn} on type ${goTypeName(v)}`);
}

function strslice(v: unknown): string[] {
  if (v === null || v === undefined) return [];
  if (Array.isArray(v)) return v.filter((e) => e !== null && e !== undefined).map(strval);
  return [strval(v)];
}

function asMap(v: unknown): Record<string, unknown> {
  if (v === null || v === undefined) return {};
  if (!isMap(v)) throw new FunctionError(`expected a map, got ${goTypeName(v)}`);
  return v;
}

function deepEqual(a: unknown, b: unknown): boolean {
  return goJson(a) === goJson(b) && goTypeName(a) === goTypeName(b);
}

/** mergo.Merge for dicts: src fills what dst lacks (or overrides, for mergeOverwrite), recursively. */
function mergeInto(dst: Record<string, unknown>, src: Record<string, unknown>, override: boolean): void {
  for (const [k, v] of Object.entries(src)) {
    const cur = dst[k];
    if (isMap(cur) && isMap(v)) mergeInto(cur, v, override);
    else if (override ? v !== undefined : cur === undefined || empty(cur)) dst[k] = v;
  }
}

function words(s: string): string[] {
  return s
    .replace(/([a-z0-9])([A-Z])/g, '$1 $2')
    .replace(/([A-Z]+)([A-Z][a-z])/g, '$1 $2')
    .split(/[^A-Za-z0-9]+/)
    .filter((w) => w !== '');
}

/** strings.Title: upper-cases the first letter of each word (words split on non letters/digits/_). */
function title(s: string): string {
  let prev = ' ';
  let out = '';
  for (const ch of s) {
    const sep = !/[\p{L}\p{Nd}_']/u.test(prev);
    out += sep ? ch.toUpperCase() : ch;
    prev = ch;
  }
  return out;
}

function hash(algo: string, s: string): string {
  return createHash(algo).update(s, 'utf8').digest('hex');
}

function adler32(s: string): string {
  let a = 1;
  let b = 0;
  for (const byte of Buffer.from(s, 'utf8')) {
    a = (a + byte) % 65521;
    b = (b + a) % 65521;
  }
  return String(((b << 16) | a) >>> 0);
}

function b32enc(s: string): string {
  const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567';
  const bytes = Buffer.from(s, 'utf8');
  let bits = 0;
  let value = 0;
  let out = '';
  for (const byte of bytes) {
    value = (value << 8) | byte;
    bits += 8;
    while (bits >= 5) {
      out += alphabet[(value >>> (bits - 5)) & 31];
      bits -= 5;
    }
  }
  if (bits > 0) out += alphabet[(value << (5 - bits)) & 31];
  while (out.length % 8 !== 0) out += '=';
  return out;
}

function b64dec(s: string): string {
  if (!/^[A-Za-z0-9+/]*={0,2}$/.test(s) || s.length % 4 !== 0) return 'illegal base64 data at input byte 0';
  return Buffer.from(s, 'base64').toString('utf8');
}

const s = (f: (x: string) => unknown): GoFunction => fn(['string'], (x) => f(x as string));
const s2 = (f: (a: string, b: string) => unknown): GoFunction =>
  fn(['string', 'string'], (a, b) => f(a as string, b as string));

export const SPRIG: FuncMap = {
  // strings
  upper: s((x) => x.toUpperCase()),
  lower: s((x) => x.toLowerCase()),
  title: s(title),
  untitle: s((x) =>
    x.replace(/(^|[^\p{L}\p{Nd}_'])(\p{L})/gu, (_m, p: string, c: string) => p + c.toLowerCase()),
  ),
  swapcase: s((x) => [...x].map((c) => (c === c.toUpperCase() ? c.toLowerCase() : c.toUpperCase())).join('')),
  camelcase: s((x) =>
    words(x)
      .map((w) => (w[0] ?? '').toUpperCase() + w.slice(1).toLowerCase())
      .join(''),
  ),
  snakecase: s((x) =>
    words(x)
      .map((w) => w.toLowerCase())
      .join('_'),
  ),
  kebabcase: s((x) =>
    words(x)
      .map((w) => w.toLowerCase())
      .join('-'),
  ),
  trim: s((x) => x.trim()),
  trimAll: s2((cut, x) => {
    const set = new Set(cut);
    const arr = [...x];
    let a = 0;
    let b = arr.length;
    while (a < b && set.has(arr[a] ?? '')) a++;
    while (b > a && set.has(arr[b - 1] ?? '')) b--;
    return arr.slice(a, b).join('');
  }),
  trimPrefix: s2((p, x) => (x.startsWith(p) ? x.slice(p.length) : x)),
  trimSuffix: s2((p, x) => (p !== '' && x.endsWith(p) ? x.slice(0, x.length - p.length) : x)),
  nospace: s((x) => x.replace(/\s+/g, '')),
  contains: s2((sub, x) => x.includes(sub)),
  hasPrefix: s2((p, x) => x.startsWith(p)),
  hasSuffix: s2((p, x) => x.endsWith(p)),
  replace: fn(['string', 'string', 'string'], (o, n, x) =>
    (x as string).split(o as string).join(n as string),
  ),
  repeat: fn(['int', 'string'], (n, x) => (x as string).repeat(Math.max(0, Number(n)))),
  trunc: fn(['int', 'string'], (c, x) => {
    const n = Number(c);
    const str = x as string;
    if (n < 0 && str.length + n > 0) return str.slice(str.length + n);
    if (n >= 0 && str.length > n) return str.slice(0, n);
    return str;
  }),
  substr: fn(['int', 'int', 'string'], (a, b, x) => {
    const str = x as string;
    const start = Number(a);
    const end = Number(b);
    if (start < 0) return str.slice(0, end);
    if (end < 0 || end > str.length) return str.slice(start);
    return str.slice(start, end);
  }),
  abbrev: fn(['int', 'string'], (w, x) => {
    const width = Number(w);
    const str = x as string;
    if (width < 4 || str.length <= width) return str;
    return `${str.slice(0, width - 3)}...`;
  }),
  initials: s((x) =>
    x
      .split(/\s+/)
      .filter((w) => w !== '')
      .map((w) => w[0])
      .join(''),
  ),
  indent: fn(['int', 'string'], (n, x) => {
    const pad = ' '.repeat(Number(n));
    return pad + (x as string).split('\n').join(`\n${pad}`);
  }),
  nindent: fn(['int', 'string'], (n, x) => {
    const pad = ' '.repeat(Number(n));
    return `\n${pad}${(x as string).split('\n').join(`\n${pad}`)}`;
  }),
  plural: fn(['string', 'string', 'int'], (one, many, n) => (n === 1n ? one : many)),
  quote: fn(
    [],
    (...a) =>
      a
        .filter((v) => v !== null)
        .map((v) => quoteGo(strval(v)))
        .join(' '),
    'any',
  ),
  squote: fn(
    [],
    (...a) =>
      a
        .filter((v) => v !== null)
        .map((v) => `'${strval(v)}'`)
        .join(' '),
    'any',
  ),
  cat: fn(
    [],
    (...a) =>
      sprint(a.filter((v) => v !== null).flatMap((v, i) => (i === 0 ? [v] : [' ', v]))).replace(
        / {2,}/g,
        ' ',
      ),
    'any',
  ),
  split: s2((sep, x) => Object.fromEntries(x.split(sep).map((p, i) => [`_${i}`, p]))),
  splitList: s2((sep, x) => x.split(sep)),
  splitn: fn(['string', 'int', 'string'], (sep, n, x) => {
    const parts = (x as string).split(sep as string);
    const limit = Number(n);
    const out =
      limit > 0 && parts.length > limit
        ? [...parts.slice(0, limit - 1), parts.slice(limit - 1).join(sep as string)]
        : parts;
    return Object.fromEntries(out.map((p, i) => [`_${i}`, p]));
  }),
  join: fn(['string', 'any'], (sep, v) => strslice(v).join(sep as string)),
  sortAlpha: fn(['any'], (v) => strslice(v).sort()),
  toString: fn(['any'], strval),
  toStrings: fn(['any'], strslice),
  // conversions and arithmetic
  int: fn(['any'], toInt64),
  int64: fn(['any'], toInt64),
  float64: fn(['any'], toFloat64),
  atoi: s((x) => (/^[+-]?\d+$/.test(x) ? BigInt(x) : 0n)),
  toDecimal: fn(['any'], (v) => {
    const n = parseInt(strval(v), 8);
    return Number.isNaN(n) ? 0n : BigInt(n);
  }),
  add: fn([], (...a) => a.reduce<bigint>((acc, v) => acc + toInt64(v), 0n), 'any'),
  add1: fn(['any'], (v) => toInt64(v) + 1n),
  sub: fn(['any', 'any'], (a, b) => toInt64(a) - toInt64(b)),
  mul: fn(['any'], (a, ...r) => r.reduce<bigint>((acc, v) => acc * toInt64(v), toInt64(a)), 'any'),
  div: fn(['any', 'any'], (a, b) => {
    const d = toInt64(b);
    if (d === 0n) throw new FunctionError('runtime error: integer divide by zero');
    return toInt64(a) / d;
  }),
  mod: fn(['any', 'any'], (a, b) => {
    const d = toInt64(b);
    if (d === 0n) throw new FunctionError('runtime error: integer divide by zero');
    return toInt64(a) % d;
  }),
  max: fn(
    ['any'],
    (a, ...r) => r.reduce<bigint>((m, v) => (toInt64(v) > m ? toInt64(v) : m), toInt64(a)),
    'any',
  ),
  min: fn(
    ['any'],
    (a, ...r) => r.reduce<bigint>((m, v) => (toInt64(v) < m ? toInt64(v) : m), toInt64(a)),
    'any',
  ),
  addf: fn([], (...a) => a.reduce<number>((acc, v) => acc + toFloat64(v), 0), 'any'),
  subf: fn(['any'], (a, ...r) => r.reduce<number>((acc, v) => acc - toFloat64(v), toFloat64(a)), 'any'),
  mulf: fn(['any'], (a, ...r) => r.reduce<number>((acc, v) => acc * toFloat64(v), toFloat64(a)), 'any'),
  divf: fn(['any'], (a, ...r) => r.reduce<number>((acc, v) => acc / toFloat64(v), toFloat64(a)), 'any'),
  floor: fn(['any'], (v) => Math.floor(toFloat64(v))),
  ceil: fn(['any'], (v) => Math.ceil(toFloat64(v))),
  round: fn(
    ['any', 'int'],
    (v, p) => {
      const f = 10 ** Number(p);
      return Math.round(toFloat64(v) * f) / f;
    },
    'any',
  ),
  until: fn(['int'], (n) => {
    const out: bigint[] = [];
    const c = n as bigint;
    if (c >= 0n) for (let i = 0n; i < c; i++) out.push(i);
    else for (let i = 0n; i > c; i--) out.push(i);
    return out;
  }),
  untilStep: fn(['int', 'int', 'int'], (a, b, st) => {
    const out: bigint[] = [];
    const [start, stop, step] = [a as bigint, b as bigint, st as bigint];
    if (step === 0n) return out;
    if (step > 0n) for (let i = start; i < stop; i += step) out.push(i);
    else for (let i = start; i > stop; i += step) out.push(i);
    return out;
  }),
  seq: fn(
    [],
    (...a) => {
      const n = a.map(toInt64);
      const [first, stepOrLast, last] =
        n.length === 1
          ? [1n, 1n, n[0] ?? 0n]
          : n.length === 2
            ? [n[0] ?? 0n, (n[1] ?? 0n) >= (n[0] ?? 0n) ? 1n : -1n, n[1] ?? 0n]
            : [n[0] ?? 0n, n[1] ?? 1n, n[2] ?? 0n];
      const out: string[] = [];
      if (stepOrLast === 0n) return '';
      for (let i = first; stepOrLast > 0n ? i <= last : i >= last; i += stepOrLast) out.push(i.toString());
      return out.join(' ');
    },
    'any',
  ),
  // defaults and flow
  default: fn(['any'], (d, ...given) => (given.length === 0 || empty(given[0]) ? d : given[0]), 'any'),
  empty: fn(['any'], empty),
  coalesce: fn([], (...a) => a.find((v) => !empty(v)) ?? null, 'any'),
  all: fn([], (...a) => a.every((v) => !empty(v)), 'any'),
  any: fn([], (...a) => a.some((v) => !empty(v)), 'any'),
  ternary: fn(['any', 'any', 'bool'], (t, f, c) => (c ? t : f)),
  required: fn(['string', 'any'], (warn, v) => {
    if (v === null || v === undefined || v === '') throw new FunctionError(warn as string);
    return v;
  }),
  fail: s((msg) => {
    throw new FunctionError(msg);
  }),
  typeOf: fn(['any'], goTypeName),
  typeIs: fn(['string', 'any'], (t, v) => t === goTypeName(v)),
  kindOf: fn(['any'], (v) => kindOf(v)),
  kindIs: fn(['string', 'any'], (k, v) => k === kindOf(v)),
  deepEqual: fn(['any', 'any'], deepEqual),
  // encodings
  b64enc: s((x) => Buffer.from(x, 'utf8').toString('base64')),
  b64dec: s(b64dec),
  b32enc: s(b32enc),
  sha1sum: s((x) => hash('sha1', x)),
  sha256sum: s((x) => hash('sha256', x)),
  sha512sum: s((x) => hash('sha512', x)),
  adler32sum: s(adler32),
  toJson: fn(['any'], (v) => safe(() => goJson(v))),
  mustToJson: fn(['any'], (v) => goJson(v)),
  toPrettyJson: fn(['any'], (v) => safe(() => goJson(v, { indent: '  ' }))),
  mustToPrettyJson: fn(['any'], (v) => goJson(v, { indent: '  ' })),
  toRawJson: fn(['any'], (v) => safe(() => goJson(v, { escapeHtml: false }))),
  mustToRawJson: fn(['any'], (v) => goJson(v, { escapeHtml: false })),
  fromJson: s((x) => {
    try {
      return parseJson(x);
    } catch {
      return null;
    }
  }),
  mustFromJson: s((x) => {
    try {
      return parseJson(x);
    } catch (err) {
      throw new FunctionError((err as Error).message);
    }
  }),
  // lists
  list: fn([], (...a) => a, 'any'),
  first: fn(['any'], (l) => asList(l, 'find first').at(0) ?? null),
  last: fn(['any'], (l) => asList(l, 'find last').at(-1) ?? null),
  rest: fn(['any'], (l) => asList(l, 'find rest').slice(1)),
  initial: fn(['any'], (l) => asList(l, 'find initial').slice(0, -1)),
  append: fn(['any', 'any'], (l, v) => [...asList(l, 'append'), v]),
  push: fn(['any', 'any'], (l, v) => [...asList(l, 'push'), v]),
  prepend: fn(['any', 'any'], (l, v) => [v, ...asList(l, 'prepend')]),
  concat: fn([], (...ls) => ls.flatMap((l) => asList(l, 'concat')), 'any'),
  reverse: fn(['any'], (l) => [...asList(l, 'find reverse')].reverse()),
  uniq: fn(['any'], (l) =>
    asList(l, 'find uniq').filter((v, i, arr) => arr.findIndex((o) => deepEqual(o, v)) === i),
  ),
  compact: fn(['any'], (l) => asList(l, 'compact').filter((v) => !empty(v))),
  without: fn(
    ['any'],
    (l, ...omit) => asList(l, 'find without').filter((v) => !omit.some((o) => deepEqual(o, v))),
    'any',
  ),
  has: fn(['any', 'any'], (needle, hay) =>
    hay === null ? false : asList(hay, 'find has').some((v) => deepEqual(v, needle)),
  ),
  // dicts
  dict: fn(
    [],
    (...a) => {
      const out: Record<string, unknown> = {};
      for (let i = 0; i < a.length; i += 2) out[strval(a[i])] = i + 1 < a.length ? a[i + 1] : '';
      return out;
    },
    'any',
  ),
  get: fn(['map', 'string'], (d, k) => {
    const m = asMap(d);
    return Object.hasOwn(m, k as string) ? m[k as string] : '';
  }),
  set: fn(['map', 'string', 'any'], (d, k, v) => {
    const m = asMap(d);
    m[k as string] = v;
    return m;
  }),
  unset: fn(['map', 'string'], (d, k) => {
    const m = asMap(d);
    delete m[k as string];
    return m;
  }),
  hasKey: fn(['map', 'string'], (d, k) => Object.hasOwn(asMap(d), k as string)),
  keys: fn([], (...ds) => ds.flatMap((d) => Object.keys(asMap(d))).sort(), 'map'),
  values: fn(['map'], (d) => {
    const m = asMap(d);
    return Object.keys(m)
      .sort()
      .map((k) => m[k]);
  }),
  pluck: fn(
    ['string'],
    (k, ...ds) =>
      ds
        .map(asMap)
        .filter((m) => Object.hasOwn(m, k as string))
        .map((m) => m[k as string]),
    'map',
  ),
  pick: fn(
    ['map'],
    (d, ...ks) => {
      const m = asMap(d);
      return Object.fromEntries(
        ks
          .map(strval)
          .filter((k) => Object.hasOwn(m, k))
          .map((k) => [k, m[k]]),
      );
    },
    'string',
  ),
  omit: fn(
    ['map'],
    (d, ...ks) => {
      const m = asMap(d);
      const drop = new Set(ks.map(strval));
      return Object.fromEntries(Object.entries(m).filter(([k]) => !drop.has(k)));
    },
    'string',
  ),
  merge: fn(
    ['map'],
    (d, ...srcs) => {
      const dst = asMap(d);
      for (const src of srcs) mergeInto(dst, asMap(src), false);
      return dst;
    },
    'map',
  ),
  mergeOverwrite: fn(
    ['map'],
    (d, ...srcs) => {
      const dst = asMap(d);
      for (const src of srcs) mergeInto(dst, asMap(src), true);
      return dst;
    },
    'map',
  ),
  dig: fn(
    ['any'],
    (...a) => {
      const dict = asMap(a.at(-1));
      const dflt = a.at(-2);
      const keys = a.slice(0, -2).map(strval);
      let cur: unknown = dict;
      for (const k of keys) {
        if (!isMap(cur) || !Object.hasOwn(cur, k)) return dflt;
        cur = cur[k];
      }
      return cur;
    },
    'any',
  ),
  deepCopy: fn(['any'], (v) => structuredClone(v)),
  // regular expressions (RE2 syntax)
  regexMatch: s2((re, x) => {
    try {
      return compileGoRegexp(re).test(x);
    } catch {
      return false;
    }
  }),
  mustRegexMatch: s2((re, x) => compileGoRegexp(re).test(x)),
  regexFind: s2((re, x) => compileGoRegexp(re).exec(x)?.[0] ?? ''),
  regexFindAll: fn(['string', 'string', 'int'], (re, x, n) => {
    const all = [...(x as string).matchAll(compileGoRegexp(re as string, 'g'))].map((m) => m[0]);
    return (n as bigint) < 0n ? all : all.slice(0, Number(n));
  }),
  regexReplaceAll: fn(['string', 'string', 'string'], (re, x, repl) =>
    (x as string).replace(compileGoRegexp(re as string, 'g'), (...m) =>
      expandGoReplacement(repl as string, m),
    ),
  ),
  regexReplaceAllLiteral: fn(['string', 'string', 'string'], (re, x, repl) =>
    (x as string).replace(compileGoRegexp(re as string, 'g'), () => repl as string),
  ),
  regexSplit: fn(['string', 'string', 'int'], (re, x, n) => {
    const parts = (x as string).split(compileGoRegexp(re as string, 'g'));
    const limit = Number(n);
    return limit > 0 && parts.length > limit ? parts.slice(0, limit) : parts;
  }),
  regexQuoteMeta: s((x) => x.replace(/[\\.+*?()|[\]{}^$]/g, '\\$&')),
  // paths
  base: s((x) => posix.basename(x) || (x === '' ? '.' : '/')),
  dir: s((x) => posix.dirname(x)),
  ext: s((x) => posix.extname(x)),
  clean: s((x) => (x === '' ? '.' : posix.normalize(x).replace(/\/$/, '') || '/')),
  isAbs: s((x) => x.startsWith('/')),
};

function kindOf(v: unknown): string {
  if (v === null || v === undefined) return 'invalid';
  if (typeof v === 'string') return 'string';
  if (typeof v === 'bigint') return 'int';
  if (typeof v === 'number') return 'float64';
  if (typeof v === 'boolean') return 'bool';
  return Array.isArray(v) ? 'slice' : 'map';
}

function safe(f: () => string): string {
  try {
    return f();
  } catch {
    return '';
  }
}
