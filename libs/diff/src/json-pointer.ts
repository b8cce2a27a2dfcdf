/** One step of a path: an object key or an array index. */
export type PathSegment = string | number;

/** RFC 6901: `~` is written `~0` and `/` is written `~1`. */
export function formatPointer(path: readonly PathSegment[]): string {
  return path.map((s) => `/${String(s).replaceAll('~', '~0').replaceAll('/', '~1')}`).join('');
}

/** Parses an RFC 6901 pointer into raw segments (array indexes stay strings: only the target knows). */
export function parsePointer(pointer: string): string[] | undefined {
  if (pointer === '') return [];
  if (!pointer.startsWith('/')) return undefined;
  return pointer
    .slice(1)
    .split('/')
    .map((s) => s.replaceAll('~1', '/').replaceAll('~0', '~'));
}

export function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Resolves raw pointer segments against a value, turning segments into indexes where arrays are met. */
export function resolveSegments(root: unknown, raw: readonly string[]): PathSegment[] | undefined {
  const out: PathSegment[] = [];
  let node = root;
  for (const seg of raw) {
    if (Array.isArray(node)) {
      if (!/^(0|[1-9]\d*)$/.test(seg)) return undefined;
      const i = Number(seg);
      if (i >= node.length) return undefined;
      out.push(i);
      node = node[i];
    } else if (isPlainObject(node) && Object.hasOwn(node, seg)) {
      out.push(seg);
      node = node[seg];
    } else {
      return undefined;
    }
  }
  return out;
}

export function getAt(root: unknown, path: readonly PathSegment[]): unknown {
  let node = root;
  for (const seg of path) {
    if (Array.isArray(node) && typeof seg === 'number') node = node[seg];
    else if (isPlainObject(node) && typeof seg === 'string') node = node[seg];
    else return undefined;
  }
  return node;
}

/**
 * Removes every path from `root` (mutating it). Paths are removed deepest array index first so that
 * removing one element does not shift the indexes of the others.
 */
export function removePaths(root: unknown, paths: readonly (readonly PathSegment[])[]): void {
  const sorted = [...paths].sort((a, b) => comparePaths(b, a));
  for (const path of sorted) {
    if (path.length === 0) continue;
    const parent = getAt(root, path.slice(0, -1));
    const last = path[path.length - 1];
    if (Array.isArray(parent) && typeof last === 'number' && last < parent.length) parent.splice(last, 1);
    else if (isPlainObject(parent) && typeof last === 'string') delete parent[last];
  }
}

/** Orders paths segment by segment, indexes numerically, so that `/a/2` sorts before `/a/10`. */
export function comparePaths(a: readonly PathSegment[], b: readonly PathSegment[]): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    const x = a[i] as PathSegment;
    const y = b[i] as PathSegment;
    if (x === y) continue;
    if (typeof x === 'number' && typeof y === 'number') return x - y;
    if (typeof x === 'number') return -1;
    if (typeof y === 'number') return 1;
    return x < y ? -1 : 1;
  }
  return a.length - b.length;
}

export function isPrefix(prefix: readonly PathSegment[], path: readonly PathSegment[]): boolean {
  return prefix.length <= path.length && prefix.every((s, i) => s === path[i]);
}

/** The text of a scalar key value (`80` and `"80"` name the same port), undefined for anything else. */
export function scalarText(value: unknown): string | undefined {
  if (typeof value === 'string') return value;
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  return undefined;
}
