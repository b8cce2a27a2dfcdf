import { formatFloat, formatValue, quoteGo } from './go-format.js';
import { goTypeName } from './values.js';

/** fmt.Sprint: spaces between operands when neither side is a string. */
export function sprint(args: unknown[]): string {
  let out = '';
  args.forEach((a, i) => {
    if (i > 0 && typeof a !== 'string' && typeof args[i - 1] !== 'string') out += ' ';
    out += formatValue(a);
  });
  return out;
}

/** fmt.Sprintln: always spaces, then a newline. */
export function sprintln(args: unknown[]): string {
  return `${args.map(formatValue).join(' ')}\n`;
}

/** fmt.Sprintf for the verbs templates use: %v %s %d %q %f %e %g %t %x %X %o %b %c %U %T %%, flags and width. */
export function sprintf(format: string, args: unknown[]): string {
  let out = '';
  let argIndex = 0;
  let i = 0;
  while (i < format.length) {
    const ch = format[i];
    if (ch !== '%') {
      out += ch;
      i++;
      continue;
    }
    const m = /^%([-+# 0]*)(\d+|\*)?(?:\.(\d+|\*)?)?([a-zA-Z%])?/.exec(format.slice(i));
    if (!m) {
      out += '%!(NOVERB)';
      break;
    }
    i += m[0].length;
    const flags = m[1] ?? '';
    let width = m[2] === '*' ? Number(args[argIndex++]) : m[2] !== undefined ? Number(m[2]) : undefined;
    const precText = m[3];
    const hasPrec = m[0].includes('.');
    const prec =
      precText === '*'
        ? Number(args[argIndex++])
        : precText !== undefined
          ? Number(precText)
          : hasPrec
            ? 0
            : undefined;
    const verb = m[4];
    if (verb === undefined) {
      out += '%!(NOVERB)';
      continue;
    }
    if (verb === '%') {
      out += '%';
      continue;
    }
    if (argIndex >= args.length) {
      out += `%!${verb}(MISSING)`;
      continue;
    }
    const arg = args[argIndex++];
    let s = formatOne(verb, arg, flags, prec);
    if (width !== undefined && Number.isFinite(width)) {
      width = Math.max(0, width);
      const len = [...s].length;
      if (len < width) {
        const pad = width - len;
        if (flags.includes('-')) s += ' '.repeat(pad);
        else if (
          flags.includes('0') &&
          /[dfeEgGxXob]/.test(verb) &&
          (typeof arg === 'number' || typeof arg === 'bigint')
        ) {
          const sign = /^[+-]/.test(s) ? (s[0] ?? '') : '';
          s = sign + '0'.repeat(pad) + s.slice(sign.length);
        } else s = ' '.repeat(pad) + s;
      }
    }
    out += s;
  }
  if (argIndex < args.length) {
    out += `%!(EXTRA ${args
      .slice(argIndex)
      .map((a) => `${goTypeName(a)}=${formatValue(a)}`)
      .join(', ')})`;
  }
  return out;
}

function bad(verb: string, arg: unknown): string {
  if (arg === null || arg === undefined) return `%!${verb}(<nil>)`;
  return `%!${verb}(${goTypeName(arg)}=${formatValue(arg)})`;
}

function signed(s: string, flags: string, negative: boolean): string {
  if (negative) return s;
  if (flags.includes('+')) return `+${s}`;
  if (flags.includes(' ')) return ` ${s}`;
  return s;
}

function formatOne(verb: string, arg: unknown, flags: string, prec: number | undefined): string {
  switch (verb) {
    case 'v':
      if (flags.includes('#') && typeof arg === 'string') return quoteGo(arg);
      if (typeof arg === 'number') return signed(formatFloat(arg), flags, arg < 0);
      return formatValue(arg);
    case 's': {
      if (typeof arg !== 'string' && (typeof arg === 'object' || arg === undefined)) {
        if (arg === null || arg === undefined) return '%!s(<nil>)';
        return formatValue(arg);
      }
      if (typeof arg !== 'string') return bad(verb, arg);
      return prec !== undefined ? [...arg].slice(0, prec).join('') : arg;
    }
    case 'q':
      if (typeof arg === 'string') return quoteGo(arg);
      if (typeof arg === 'bigint') return `'${String.fromCodePoint(Number(arg))}'`;
      return bad(verb, arg);
    case 't':
      return typeof arg === 'boolean' ? String(arg) : bad(verb, arg);
    case 'd':
      if (typeof arg === 'bigint') return signed(arg.toString(), flags, arg < 0n);
      if (Array.isArray(arg)) return `[${arg.map((a) => formatOne('d', a, flags, prec)).join(' ')}]`;
      return bad(verb, arg);
    case 'c':
      return typeof arg === 'bigint' ? String.fromCodePoint(Number(arg)) : bad(verb, arg);
    case 'U':
      return typeof arg === 'bigint'
        ? `U+${arg.toString(16).toUpperCase().padStart(4, '0')}`
        : bad(verb, arg);
    case 'x':
    case 'X':
    case 'o':
    case 'b': {
      const base = verb === 'o' ? 8 : verb === 'b' ? 2 : 16;
      let s: string;
      if (typeof arg === 'bigint') s = (arg < 0n ? '-' : '') + (arg < 0n ? -arg : arg).toString(base);
      else if (typeof arg === 'string' && base === 16) s = Buffer.from(arg, 'utf8').toString('hex');
      else return bad(verb, arg);
      if (flags.includes('#') && base === 16) s = `0x${s}`;
      return verb === 'X' ? s.toUpperCase() : s;
    }
    case 'f':
    case 'F':
    case 'e':
    case 'E':
    case 'g':
    case 'G': {
      if (typeof arg !== 'number') return bad(verb, arg);
      let s: string;
      if (verb === 'f' || verb === 'F') s = arg.toFixed(prec ?? 6);
      else if (verb === 'e' || verb === 'E') s = goExp(arg.toExponential(prec ?? 6));
      else s = prec === undefined ? formatFloat(arg) : goExp(Number(arg.toPrecision(prec || 1)).toString());
      if (verb === 'E' || verb === 'G') s = s.toUpperCase();
      return signed(s, flags, arg < 0);
    }
    case 'T':
      return goTypeName(arg);
    default:
      return bad(verb, arg);
  }
}

function goExp(s: string): string {
  return s.replace(/e([+-])(\d)$/, 'e$10$2');
}
