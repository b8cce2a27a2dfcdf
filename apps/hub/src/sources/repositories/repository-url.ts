import { realpathSync } from 'node:fs';
import { basename, dirname, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

/** Where local (file://) repositories may live, and where they never may. */
export interface LocalRepositoryPolicy {
  /** Directories an operator allowed (FLOTILLA_LOCAL_REPOSITORIES); 'any' in development mode. */
  allowed: string[] | 'any';
  /** The hub's data directory: its mirrors were fetched with credentials an author may not have. */
  dataDir: string;
}

const CREDENTIALS_API =
  'give credentials with PUT /api/v1/repositories/<id>/credentials (or `credentials` in POST /api/v1/repositories) instead';

/**
 * Why `url` may not be a repository, or null. The one check of every way a URL enters the hub
 * (POST /repositories, an appset's repoURL literal or generated, a fleet source), run again before
 * each fetch: git itself runs whatever a URL asks — `ext::sh -c …` runs a command, `--upload-pack=…`
 * is an option, a plain path reads the hub's own disk — so only plain transports to a host, and
 * local directories an operator allowed, pass.
 */
export function repositoryUrlProblem(url: string, policy: LocalRepositoryPolicy): string | null {
  if (url.length === 0) return 'must not be empty';
  if (url.length > 2048) return 'is longer than 2048 characters';
  if (url.startsWith('-'))
    return 'must not start with "-" (git would read it as an option, such as --upload-pack)';
  if (/^[A-Za-z][A-Za-z0-9+.-]*::/.test(url))
    return 'must not use a git transport helper ("<helper>::…", such as ext::, which runs a command)';
  if (/[\s\p{Cc}]/u.test(url)) return 'must not contain spaces or control characters';
  const scheme = /^([A-Za-z][A-Za-z0-9+.-]*):\/\//.exec(url)?.[1]?.toLowerCase();
  if (scheme === undefined) {
    // user@host:path, git's scp-like ssh syntax; the user part has no password by construction.
    if (/^[\w.-]+@[\w.-]+:(?!\/)/.test(url) || /^[\w.-]+@[\w.-]+:\/[^/]/.test(url)) return null;
    return 'is not a Git URL: use https://, ssh://, git://, user@host:path, or file:///absolute/path for a local repository an operator allowed';
  }
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return 'is not a valid URL';
  }
  switch (scheme) {
    case 'https':
    case 'http':
    case 'git':
      if (parsed.username !== '' || parsed.password !== '')
        return `must not carry credentials (user:password@ is stored and shown to every viewer); ${CREDENTIALS_API}`;
      break;
    case 'ssh':
      if (parsed.password !== '')
        return `must not carry a password (it is stored and shown to every viewer); ${CREDENTIALS_API}`;
      break;
    case 'file':
      return localProblem(parsed, policy);
    default:
      return `uses the scheme ${scheme}://; expected https://, http://, ssh://, git:// or file://`;
  }
  if (parsed.hostname === '') return 'must name a host';
  return null;
}

function localProblem(url: URL, policy: LocalRepositoryPolicy): string | null {
  if (url.hostname !== '' && url.hostname !== 'localhost')
    return 'file:// URLs name no host: file:///absolute/path';
  let path: string;
  try {
    path = real(fileURLToPath(url));
  } catch {
    return 'is not a valid file:// URL';
  }
  if (within(path, real(policy.dataDir)))
    return "is inside the hub's data directory, where its mirrors are: never a repository";
  if (policy.allowed === 'any') return null;
  if (policy.allowed.some((dir) => within(path, real(dir)))) return null;
  return policy.allowed.length === 0
    ? 'is a local repository, and this hub allows none (an operator lists the directories allowed in FLOTILLA_LOCAL_REPOSITORIES)'
    : `is a local repository outside the directories FLOTILLA_LOCAL_REPOSITORIES allows (${policy.allowed.join(', ')})`;
}

/**
 * The path as the filesystem resolves it: symlinks followed in the deepest part that exists (a path
 * not made yet, under a link into the data dir, is judged where it would land).
 */
function real(path: string): string {
  let head = resolve(path);
  let tail = '';
  for (let i = 0; i < 256; i++) {
    try {
      return realpathSync(head) + tail;
    } catch {
      const parent = dirname(head);
      if (parent === head) break;
      tail = `${sep}${basename(head)}${tail}`;
      head = parent;
    }
  }
  return resolve(path);
}

/** `url` with any user:password@ removed, to name it in errors and logs. */
export function withoutCredentials(url: string): string {
  return url.replace(/^([A-Za-z][A-Za-z0-9+.-]*:\/\/)[^/@]*@/, '$1');
}

function within(path: string, dir: string): boolean {
  return path === dir || path.startsWith(dir.endsWith(sep) ? dir : `${dir}${sep}`);
}

/**
 * `owner/name` from a Git URL (`https://host/owner/name.git`, `ssh://git@host/owner/name`,
 * `git@host:owner/name.git`), or null when it has no such path.
 */
export function repositoryPathOf(url: string): string | null {
  const scp = /^[^/@]+@[^:/]+:(.+)$/.exec(url);
  let path: string;
  if (scp?.[1]) path = scp[1];
  else {
    try {
      const parsed = new URL(url);
      // A local path (file://) names no repository on a Git host.
      if (!['http:', 'https:', 'ssh:', 'git:'].includes(parsed.protocol)) return null;
      path = parsed.pathname;
    } catch {
      return null;
    }
  }
  const clean = path
    .replace(/^\/+/, '')
    .replace(/\/+$/, '')
    .replace(/\.git$/, '');
  return clean.split('/').length >= 2 ? clean : null;
}
