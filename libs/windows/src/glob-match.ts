/**
 * Glob matching as Argo CD does it for sync-window selectors: `github.com/gobwas/glob` compiled with
 * no separators, so `*` (and `**`) match any run of characters including `/` (cluster URLs),
 * `?` one character, `[abc]`/`[a-z]`/`[!a-z]` one character of (or not of) a class, `{a,b}` one of
 * the alternatives (which may hold patterns), and `\x` a literal `x`. A pattern that does not
 * compile matches nothing, as in Argo CD. picomatch and friends treat `/` as a path separator,
 * which would change which clusters a window selects, hence this small translator.
 */
const cache = new Map<string, RegExp | null>();

export function globMatch(pattern: string, value: string): boolean {
  if (pattern === '*') return true;
  let re = cache.get(pattern);
  if (re === undefined) {
    re = compileGlob(pattern);
    cache.set(pattern, re);
  }
  return re !== null && re.test(value);
}

/** The RegExp equivalent of a gobwas glob, or null when the pattern is malformed. */
export function compileGlob(pattern: string): RegExp | null {
  const chars = [...pattern];
  let i = 0;

  const escape = (c: string): string => c.replace(/[\\^$.*+?()[\]{}|/]/g, '\\$&');
  const escapeInClass = (c: string): string => c.replace(/[\\\]^-]/g, '\\$&');

  // Reads a sequence until one of `stops` (at depth of the current alternative) or the end.
  const sequence = (inAlternatives: boolean): string | null => {
    let out = '';
    while (i < chars.length) {
      const c = chars[i] as string;
      if (inAlternatives && (c === ',' || c === '}')) return out;
      i++;
      switch (c) {
        case '\\': {
          const next = chars[i];
          if (next === undefined) return null;
          i++;
          out += escape(next);
          break;
        }
        case '*':
          while (chars[i] === '*') i++;
          out += '[^]*';
          break;
        case '?':
          out += '[^]';
          break;
        case '[': {
          const cls = charClass();
          if (cls === null) return null;
          out += cls;
          break;
        }
        case '{': {
          const alts: string[] = [];
          for (;;) {
            const alt = sequence(true);
            if (alt === null) return null;
            alts.push(alt);
            const sep = chars[i];
            if (sep === undefined) return null;
            i++;
            if (sep === '}') break;
          }
          out += `(?:${alts.join('|')})`;
          break;
        }
        default:
          out += escape(c);
      }
    }
    return inAlternatives ? null : out;
  };

  const charClass = (): string | null => {
    let negate = false;
    if (chars[i] === '!') {
      negate = true;
      i++;
    }
    let body = '';
    let closed = false;
    while (i < chars.length) {
      const c = chars[i++] as string;
      if (c === ']') {
        closed = true;
        break;
      }
      if (c === '\\') {
        const next = chars[i++];
        if (next === undefined) return null;
        body += escapeInClass(next);
        continue;
      }
      const dash = chars[i];
      const hi = chars[i + 1];
      if (dash === '-' && hi !== undefined && hi !== ']') {
        if (hi < c) return null;
        body += `${escapeInClass(c)}-${escapeInClass(hi)}`;
        i += 2;
        continue;
      }
      body += escapeInClass(c);
    }
    if (!closed || body === '') return null;
    return negate ? `[^${body}]` : `[${body}]`;
  };

  const source = sequence(false);
  if (source === null) return null;
  try {
    return new RegExp(`^${source}$`, 'u');
  } catch {
    return null;
  }
}
