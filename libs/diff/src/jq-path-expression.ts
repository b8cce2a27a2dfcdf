import jq from '@michaelhomer/jqjs';
import { DiffError } from './diff-error.js';
import { type PathSegment } from './json-pointer.js';

/** More paths than any real manifest holds; a bound so a runaway expression (`..`) cannot hang the diff. */
const MAX_PATHS = 10_000;

export type PathFinder = (value: unknown) => PathSegment[][];

const cache = new Map<string, PathFinder>();

/**
 * Compiles a jq path expression (`.spec.containers[] | select(.name == "x") | .image`) into a
 * function listing the paths it designates in a value, as jq's `path(f)` does. Argo CD deletes
 * those paths before diffing; so does this lib. Throws a DiffError when the expression is not jq.
 */
export function compileJqPaths(expression: string, where: string): PathFinder {
  const cached = cache.get(expression);
  if (cached) return cached;
  let filter: (input: unknown) => Iterable<unknown>;
  try {
    filter = jq.compile(`path(${expression})`);
  } catch (err) {
    // jqjs throws plain strings for syntax errors.
    throw new DiffError(
      'invalid-ignore-rule',
      `invalid jq path expression '${expression}': ${String(err)}`,
      where,
    );
  }
  const finder: PathFinder = (value) => {
    const out: PathSegment[][] = [];
    try {
      for (const p of filter(value)) {
        if (!Array.isArray(p) || !p.every((s) => typeof s === 'string' || typeof s === 'number')) continue;
        // jq stops with an error when a path steps into a string or a number; jqjs does not.
        if (!traversable(value, p)) return [];
        out.push(p);
        if (out.length >= MAX_PATHS) break;
      }
    } catch {
      // A runtime error (`.a[]` over a string) means the expression designates nothing in this
      // object: Argo CD's `del(…)` fails as a whole and leaves the object as it is.
      return [];
    }
    return out;
  };
  cache.set(expression, finder);
  return finder;
}

function traversable(root: unknown, path: readonly PathSegment[]): boolean {
  let node = root;
  for (const seg of path) {
    if (node === null || node === undefined) return true;
    if (typeof node !== 'object') return false;
    node = (node as Record<string | number, unknown>)[seg];
  }
  return true;
}
