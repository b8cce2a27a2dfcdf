/**
 * The two glob dialects the git generator needs: Go's path.Match for directories (`*` stays within
 * one path segment) and git's default pathspec matching for files (`*` crosses '/', and a pattern
 * without wildcards also matches everything below a directory of that name).
 */

function classToRegex(pattern: string, start: number): { re: string; end: number } | undefined {
  let i = start + 1;
  let negate = false;
  if (pattern[i] === '^' || pattern[i] === '!') {
    negate = true;
    i++;
  }
  let body = '';
  let first = true;
  while (i < pattern.length && (pattern[i] !== ']' || first)) {
    let ch = pattern[i] ?? '';
    if (ch === '\\') {
      i++;
      ch = pattern[i] ?? '';
    }
    body += /[\]\\^-]/.test(ch) && ch !== '-' ? `\\${ch}` : ch;
    first = false;
    i++;
  }
  if (i >= pattern.length) return undefined;
  return { re: `[${negate ? '^' : ''}${body}]`, end: i };
}

function escapeRe(ch: string): string {
  return ch.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');
}

function globToRegex(pattern: string, crossSlash: boolean): RegExp | undefined {
  let re = '';
  for (let i = 0; i < pattern.length; i++) {
    const ch = pattern[i] ?? '';
    if (ch === '*') re += crossSlash ? '.*' : '[^/]*';
    else if (ch === '?') re += crossSlash ? '.' : '[^/]';
    else if (ch === '[') {
      const cls = classToRegex(pattern, i);
      if (!cls) return undefined;
      re += crossSlash ? cls.re : `(?!/)${cls.re}`;
      i = cls.end;
    } else if (ch === '\\' && i + 1 < pattern.length) {
      i++;
      re += escapeRe(pattern[i] ?? '');
    } else re += escapeRe(ch);
  }
  return new RegExp(`^${re}$`, 's');
}

/** Go's path.Match: a malformed pattern matches nothing (Argo CD logs and skips it). */
export function pathMatch(pattern: string, name: string): boolean {
  return globToRegex(pattern, false)?.test(name) ?? false;
}

/** `git ls-files -- <pathspec>` without magic: fnmatch across '/', or a literal file/directory prefix. */
export function pathspecMatch(pattern: string, file: string): boolean {
  const spec = pattern.replace(/^\.\//, '').replace(/\/+$/, '');
  if (spec === '' || spec === '.') return true;
  if (file === spec || file.startsWith(`${spec}/`)) return true;
  if (!/[*?[]/.test(spec)) return false;
  return globToRegex(spec, true)?.test(file) ?? false;
}
