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

/**
 * A source path as an appset writes it (`apps/web`, `./apps/web/`, `.`) → the repository-relative
 * directory ('' = root). Refuses absolute paths and any `..` segment: a source names a place inside
 * the repository, never a way out of it.
 */
export function safeSourcePath(path: string): string {
  const trimmed = path.trim();
  if (posix.isAbsolute(trimmed) || trimmed.split('/').includes('..')) {
    throw new ManifestError(
      'UNSAFE_PATH',
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
 * inside the repository, no manifest or kustomization file may exceed the per-file limit, and the
 * whole checkout must fit the tree limit. Throws ManifestError naming the offending path.
 */
export function checkTreeEntries(
  entries: readonly TreeEntry[],
  limits: TreeLimits = DEFAULT_TREE_LIMITS,
): void {
  let total = 0;
  for (const e of entries) {
    if (e.kind === 'symlink') {
      const target = e.linkTarget ?? '';
      if (resolveInRepo(posix.dirname(e.path) === '.' ? '' : posix.dirname(e.path), target) === null) {
        throw new ManifestError(
          'UNSAFE_PATH',
          e.path,
          `symlink to "${target}" points outside the repository`,
        );
      }
      continue;
    }
    if (e.kind !== 'file') continue;
    if (e.size > limits.maxFileBytes && KUSTOMIZE_READABLE.test(e.path)) {
      throw new ManifestError('TOO_LARGE', e.path, `file is larger than ${limits.maxFileBytes} bytes`);
    }
    total += e.size;
  }
  if (total > limits.maxTreeBytes) {
    throw new ManifestError(
      'TOO_LARGE',
      '.',
      `the commit's files add up to ${total} bytes, more than the ${limits.maxTreeBytes} a render may check out`,
    );
  }
}
