import { posix } from 'node:path';
import { ManifestError } from '../manifest-error.js';

/** One entry of a commit's tree, as `git ls-tree -r -l` describes it. */
export interface TreeEntry {
  /** '/'-separated, relative to the repository root. */
  path: string;
  kind: 'file' | 'symlink' | 'submodule';
  /** Bytes of the blob (for a symlink: of its target text). */
  size: number;
  /** A symlink's target as stored in Git. */
  linkTarget?: string;
}

export interface TreeLimits {
  /** Largest manifest or kustomization file accepted, in bytes. */
  maxFileBytes: number;
  /** Largest sum of all file sizes of a checkout, in bytes. */
  maxTreeBytes: number;
}

export const DEFAULT_TREE_LIMITS: TreeLimits = {
  maxFileBytes: 4 * 1024 * 1024,
  maxTreeBytes: 256 * 1024 * 1024,
};

/**
 * `rel` resolved against the repository directory `fromDir` ('' = root), normalised; `null` when it
 * leaves the repository (`../` past the root, or an absolute path).
 */
export function resolveInRepo(fromDir: string, rel: string): string | null {
  if (posix.isAbsolute(rel)) return null;
  const joined = posix.normalize(posix.join(fromDir || '.', rel));
  if (joined === '..' || joined.startsWith('../')) return null;
  return joined === '.' ? '' : joined.replace(/\/+$/, '');
}

/** The most symbolic links one path may go through, as Linux allows (ELOOP past that). */
const MAX_LINK_HOPS = 40;

/** The symlinks of a commit's tree: repository path → link target as stored in Git. */
export function symlinksOf(entries: readonly TreeEntry[]): Map<string, string> {
  return new Map(entries.filter((e) => e.kind === 'symlink').map((e) => [e.path, e.linkTarget ?? '']));
}

/**
 * `rel` resolved against the repository directory `fromDir` as the filesystem resolves it in a
 * checkout: component by component, a component that is one of `links` replaced by its target
 * (relative to the link's directory) before the next `..` applies. `a/b/x -> ../..` and then
 * `a/b/x/../../..` climbs out, although the same text read without the links stays inside. `null` when
 * the path leaves the repository (or an absolute link, or more than 40 links: a loop).
 */
export function resolveThroughLinks(
  fromDir: string,
  rel: string,
  links: ReadonlyMap<string, string>,
): string | null {
  if (posix.isAbsolute(rel)) return null;
  const resolved: string[] = fromDir ? fromDir.split('/') : [];
  let pending = rel.split('/');
  let hops = 0;
  while (pending.length > 0) {
    const segment = pending.shift() as string;
    if (segment === '' || segment === '.') continue;
    if (segment === '..') {
      if (resolved.length === 0) return null;
      resolved.pop();
      continue;
    }
    resolved.push(segment);
    const target = links.get(resolved.join('/'));
    if (target === undefined) continue;
    if (++hops > MAX_LINK_HOPS || posix.isAbsolute(target)) return null;
    resolved.pop();
    pending = [...target.split('/'), ...pending];
  }
  return resolved.join('/');
}

/**
 * A source path as an appset writes it (`apps/web`, `./apps/web/`, `.`) → the repository-relative
 * directory ('' = root). Refuses absolute paths and any `..` segment: a source names a place inside
 * the repository, never a way out of it.
 */
export function safeSourcePath(path: string): string {
  const trimmed = path.trim();
  if (posix.isAbsolute(trimmed) || trimmed.split('/').includes('..')) {
    throw new ManifestError(
      'manifest-unsafe-path',
      path,
      'the source path must stay inside the repository (no absolute path, no "..")',
    );
  }
  const p = posix.normalize(trimmed || '.').replace(/\/+$/, '');
  return p === '.' ? '' : p;
}

const KUSTOMIZE_READABLE = /(^|\/)(kustomization\.ya?ml|Kustomization)$|\.(ya?ml|json)$/i;

/**
 * Checks a commit's tree before it is written to disk for a tool to read: every symlink must point
 * inside the repository once every link on its way is followed (`entries` must hold them all), no manifest or kustomization file may exceed the per-file limit, and the
 * whole checkout must fit the tree limit. Throws ManifestError naming the offending path.
 */
export function checkTreeEntries(
  entries: readonly TreeEntry[],
  limits: TreeLimits = DEFAULT_TREE_LIMITS,
  /** Every symlink of the commit, when `entries` is only part of it. */
  links: ReadonlyMap<string, string> = symlinksOf(entries),
): void {
  let total = 0;
  for (const e of entries) {
    if (e.kind === 'symlink') {
      const target = e.linkTarget ?? '';
      // Through the other links, as a checkout resolves it: each link on its own may look harmless.
      const from = posix.dirname(e.path) === '.' ? '' : posix.dirname(e.path);
      if (resolveThroughLinks(from, target, links) === null) {
        throw new ManifestError(
          'manifest-unsafe-path',
          e.path,
          `symlink to "${target}" points outside the repository`,
        );
      }
      continue;
    }
    if (e.kind !== 'file') continue;
    if (e.size > limits.maxFileBytes && KUSTOMIZE_READABLE.test(e.path)) {
      throw new ManifestError(
        'manifest-too-large',
        e.path,
        `file is larger than ${limits.maxFileBytes} bytes`,
      );
    }
    total += e.size;
  }
  if (total > limits.maxTreeBytes) {
    throw new ManifestError(
      'manifest-too-large',
      '.',
      `the commit's files add up to ${total} bytes, more than the ${limits.maxTreeBytes} a render may check out`,
    );
  }
}
