import { type Environment } from '@marcbachmann/cel-js';
import { CelCIDR, CelIP } from './ip-library.js';

/**
 * RE2's `(?i)`-style leading flags are common in Kubernetes policies; JavaScript's RegExp takes them
 * as flags instead. Other RE2 syntax that JavaScript lacks fails to compile and says so.
 */
export function toRegExp(pattern: string, global = false): RegExp {
  const lead = /^\(\?([imsU]+)\)/.exec(pattern);
  const flags = new Set(lead?.[1]?.replace('U', '').split('') ?? []);
  if (global) flags.add('g');
  flags.add('u');
  return new RegExp(lead ? pattern.slice(lead[0].length) : pattern, [...flags].join(''));
}

/** A CEL value as `%s` and `string()` print it (cel-go's ext.Strings formatting). */
export function celText(v: unknown): string {
  if (v === null || v === undefined) return 'null';
  if (typeof v === 'string') return v;
  if (typeof v === 'bigint' || typeof v === 'boolean') return String(v);
  if (typeof v === 'number') return Number.isInteger(v) && Math.abs(v) < 1e21 ? `${v}` : String(v);
  if (Array.isArray(v)) return `[${v.map(celText).join(', ')}]`;
  if (v instanceof Map) return `{${[...v].map(([k, x]) => `${celText(k)}: ${celText(x)}`).join(', ')}}`;
  if (typeof v === 'object' && v.constructor === Object)
    return `{${Object.entries(v)
      .map(([k, x]) => `${k}: ${celText(x)}`)
      .join(', ')}}`;
  if (v instanceof CelIP || v instanceof CelCIDR) return v.toString();
  throw new Error(
    `format: %s cannot print a value of type ${typeof v === 'object' ? v.constructor.name : typeof v}`,
  );
}

function number(v: unknown, verb: string): number | bigint {
  if (typeof v === 'bigint' || typeof v === 'number') return v;
  throw new Error(`format: %${verb} expects a number, got ${celText(v)}`);
}

/** cel-go's `string.format(list)`: %s %d %f %e %b %o %x %X with an optional precision, and %%. */
export function formatString(template: string, args: readonly unknown[]): string {
  let next = 0;
  return template.replace(/%(?:\.(\d+))?([sdfeboxX%])/g, (_, precision: string | undefined, verb: string) => {
    if (verb === '%') return '%';
    if (next >= args.length) throw new Error(`format: index ${next} out of range`);
    const v = args[next++];
    const digits = precision === undefined ? 6 : Number(precision);
    switch (verb) {
      case 's':
        return celText(v);
      case 'd':
        return typeof v === 'number' ? Math.trunc(v).toString() : String(number(v, verb));
      case 'f':
        return Number(number(v, verb)).toFixed(digits);
      case 'e':
        return Number(number(v, verb))
          .toExponential(digits)
          .replace(/e([+-])(\d)$/, 'e$10$2');
      case 'b':
        return number(v, verb).toString(2);
      case 'o':
        return number(v, verb).toString(8);
      case 'x':
      case 'X': {
        const text =
          typeof v === 'string'
            ? [...new TextEncoder().encode(v)].map((b) => b.toString(16).padStart(2, '0')).join('')
            : number(v, verb).toString(16);
        return verb === 'X' ? text.toUpperCase() : text;
      }
      default:
        throw new Error(`format: unknown verb %${verb}`);
    }
  });
}

/** The `strings` namespace object, so that `strings.quote(s)` resolves as in cel-go. */
class StringsNamespace {}

/**
 * What Kubernetes enables beyond cel-js's own string functions: cel-go's ext.Strings (`charAt`,
 * `replace`, `reverse`, `strings.quote`, `format`) and Kubernetes' regex library (`find`, `findAll`).
 */
export function registerStringLibrary(env: Environment): void {
  env
    .registerType('kubernetes.StringsNamespace', StringsNamespace)
    .registerConstant('strings', 'kubernetes.StringsNamespace', new StringsNamespace())
    .registerFunction('string.charAt(int): string', (s: string, i: bigint) => {
      const chars = [...s];
      if (i < 0n || i > BigInt(chars.length)) throw new Error(`index out of range: ${i}`);
      return chars[Number(i)] ?? '';
    })
    .registerFunction('string.replace(string, string): string', (s: string, a: string, b: string) =>
      s.split(a).join(b),
    )
    .registerFunction(
      'string.replace(string, string, int): string',
      (s: string, a: string, b: string, n: bigint) => {
        if (n < 0n) return s.split(a).join(b);
        const parts = s.split(a);
        const count = Number(n);
        return (
          parts.slice(0, count + 1).join(b) +
          (parts.length > count + 1 ? a + parts.slice(count + 1).join(a) : '')
        );
      },
    )
    .registerFunction('string.reverse(): string', (s: string) => [...s].reverse().join(''))
    .registerFunction('kubernetes.StringsNamespace.quote(string): string', (_: StringsNamespace, s: string) =>
      JSON.stringify(s),
    )
    .registerFunction('string.format(list): string', (s: string, args: readonly unknown[]) =>
      formatString(s, args),
    )
    .registerFunction(
      'string.find(string): string',
      (s: string, re: string) => toRegExp(re).exec(s)?.[0] ?? '',
    )
    .registerFunction('string.findAll(string): list<string>', (s: string, re: string) =>
      [...s.matchAll(toRegExp(re, true))].map((m) => m[0]),
    )
    .registerFunction('string.findAll(string, int): list<string>', (s: string, re: string, n: bigint) => {
      const all = [...s.matchAll(toRegExp(re, true))].map((m) => m[0]);
      return n < 0n ? all : all.slice(0, Number(n));
    });
}
