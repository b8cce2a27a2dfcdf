/**
 * Go's RE2 syntax mapped onto JS RegExp for the common cases: leading inline flags (`(?i)`, `(?s)`,
 * `(?m)`), named groups written `(?P<name>…)`, and Go's `$1`/`${name}` replacement expansion.
 */
export function compileGoRegexp(pattern: string, extraFlags = ''): RegExp {
  let flags = extraFlags;
  let src = pattern;
  const m = /^\(\?([imsU]+)\)/.exec(src);
  if (m) {
    for (const f of m[1] ?? '') if (f !== 'U' && !flags.includes(f)) flags += f;
    src = src.slice(m[0].length);
  }
  src = src.replace(/\(\?P</g, '(?<');
  return new RegExp(src, `${flags}u`);
}

/** regexp.Expand: `$name` takes the longest run of word characters; `${name}` is explicit; `$$` is `$`. */
export function expandGoReplacement(template: string, match: unknown[]): string {
  const last = match.at(-1);
  const groups =
    typeof last === 'object' && last !== null ? (last as Record<string, string | undefined>) : {};
  const numbered = match.filter(
    (_, i) => i < match.length - (typeof last === 'object' && last !== null ? 3 : 2),
  );
  return template.replace(
    /\$(\$|\{([A-Za-z0-9_]+)\}|([A-Za-z0-9_]+))/g,
    (_all, _m: string, braced?: string, bare?: string) => {
      if (braced === undefined && bare === undefined) return '$';
      const name = braced ?? bare ?? '';
      if (/^\d+$/.test(name)) {
        const v = numbered[Number(name)];
        return typeof v === 'string' ? v : '';
      }
      return groups[name] ?? '';
    },
  );
}
