import { posix } from 'node:path';
import { parseDocument } from 'yaml';
import { ManifestError } from '../manifest-error.js';
import { resolveInRepo, resolveThroughLinks } from './repo-paths.js';

/** The file names kustomize looks for, in its own order of preference. */
export const KUSTOMIZATION_FILE_NAMES = ['kustomization.yaml', 'kustomization.yml', 'Kustomization'] as const;

/** The kustomization file directly in `dir` ('' = root) among `files` (repository paths), if any. */
export function kustomizationFileIn(files: Iterable<string>, dir: string): string | undefined {
  const present = new Set(files);
  for (const name of KUSTOMIZATION_FILE_NAMES) {
    const path = dir ? `${dir}/${name}` : name;
    if (present.has(path)) return path;
  }
  return undefined;
}

/** Whether `path` is a kustomization file (any directory). */
export function isKustomizationFile(path: string): boolean {
  return (KUSTOMIZATION_FILE_NAMES as readonly string[]).includes(posix.basename(path));
}

export interface KustomizationCheck {
  /** The kustomization file's repository path. */
  file: string;
  content: string;
  /** Every file and directory path of the commit, to tell a local `host.name/dir` from a remote one. */
  repoPaths: ReadonlySet<string>;
  /** Remote bases (URLs, `github.com/...`) allowed; off by default. */
  allowRemoteBases: boolean;
  /** The commit's symlinks (symlinksOf): entries are resolved through them, as kustomize's reads are. */
  links?: ReadonlyMap<string, string>;
}

// Fields whose entries may name another directory (or, for resources, a remote base).
const REFERENCE_FIELDS = ['resources', 'components', 'bases'] as const;

const URL_SCHEME = /^[a-z][a-z0-9+.-]*:\/\//i;
const HOST_LIKE = /^[a-z0-9-]+(\.[a-z0-9-]+)+(:\d+)?\//i;

/** Whether kustomize would fetch this `resources`/`components`/`bases` entry from the network. */
export function isRemoteReference(entry: string, repoPaths: ReadonlySet<string>, fromDir: string): boolean {
  if (URL_SCHEME.test(entry) || /^git@/.test(entry) || /^git::/.test(entry)) return true;
  if (!HOST_LIKE.test(entry)) return false;
  // kustomize tries the local path first: a directory really named `example.com` is local.
  const local = resolveInRepo(fromDir, entry);
  return local === null || !repoPaths.has(local);
}

/**
 * Refuses a kustomization that would reach outside the commit: a remote base when they are not
 * allowed, or a local reference that climbs out of the repository. Throws ManifestError with the
 * file and the field (`resources[2]`). Returns the local references, resolved to repository paths.
 */
export function checkKustomization(check: KustomizationCheck): string[] {
  const doc = parseDocument(check.content, { prettyErrors: false });
  const error = doc.errors[0];
  if (error) {
    throw new ManifestError(
      'manifest-invalid-kustomization',
      check.file,
      error.message.split('\n')[0] ?? 'invalid YAML',
    );
  }
  const value: unknown = doc.toJS({ maxAliasCount: 100 });
  const local: string[] = [];
  if (value === null || value === undefined) return local;
  if (typeof value !== 'object' || Array.isArray(value)) {
    throw new ManifestError(
      'manifest-invalid-kustomization',
      check.file,
      'a kustomization must be a mapping',
    );
  }
  const dir = posix.dirname(check.file) === '.' ? '' : posix.dirname(check.file);
  for (const field of REFERENCE_FIELDS) {
    const list = (value as Record<string, unknown>)[field];
    if (list === undefined || list === null) continue;
    if (!Array.isArray(list)) {
      throw new ManifestError('manifest-invalid-kustomization', check.file, `${field}: must be a list`);
    }
    list.forEach((entry, i) => {
      if (typeof entry !== 'string') {
        throw new ManifestError(
          'manifest-invalid-kustomization',
          check.file,
          `${field}[${i}]: must be a string`,
        );
      }
      if (isRemoteReference(entry, check.repoPaths, dir)) {
        if (check.allowRemoteBases) return;
        throw new ManifestError(
          'manifest-remote-base',
          check.file,
          `${field}[${i}]: "${entry}" is a remote base; remote bases are off (set KUSTOMIZE_ALLOW_REMOTE_BASES=true to allow them)`,
        );
      }
      const resolved = check.links ? resolveThroughLinks(dir, entry, check.links) : resolveInRepo(dir, entry);
      if (resolved === null) {
        throw new ManifestError(
          'manifest-unsafe-path',
          check.file,
          `${field}[${i}]: "${entry}" points outside the repository`,
        );
      }
      local.push(resolved);
    });
  }
  return local;
}

/**
 * Checks the kustomization in `dir` and every kustomization it reaches through local
 * resources/components/bases, transitively (each once). `read` returns a repository file's text.
 * Kustomizations elsewhere in the repository are not this render's business. Returns the
 * directories reached (`dir` first), whose files kustomize may read.
 */
export function checkKustomizationTree(
  dir: string,
  repoPaths: ReadonlySet<string>,
  read: (path: string) => string,
  allowRemoteBases: boolean,
  links?: ReadonlyMap<string, string>,
): string[] {
  const seen = new Set<string>();
  const queue = [dir];
  while (queue.length > 0) {
    const next = queue.shift() ?? '';
    if (seen.has(next)) continue;
    seen.add(next);
    const file = kustomizationFileIn(repoPaths, next);
    if (!file) continue; // a plain file or a directory kustomize itself will complain about
    queue.push(
      ...checkKustomization({
        file,
        content: read(file),
        repoPaths,
        allowRemoteBases,
        ...(links ? { links } : {}),
      }),
    );
  }
  return [...seen];
}
