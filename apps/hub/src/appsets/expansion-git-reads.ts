import type { GitMirrors } from '../git/git-mirror.js';

/**
 * The Git reads of one expansion, each done once. Every mirror read spawns `git` synchronously
 * (~5–10 ms on a busy machine), and an expansion asks the same questions over and over: the
 * template's `targetRevision` is resolved once per target, and a matrix re-runs its git generator
 * once per cluster. At 1,000 clusters × 20 directories that was 20,000+ spawns — most of the
 * expansion's time. Within one expansion a ref means one commit, which is also what makes its
 * targets consistent with each other. Errors are not cached: they end the expansion anyway.
 */
export class ExpansionGitReads {
  private readonly commits = new Map<string, string>();
  private readonly listings = new Map<string, string[]>();
  private readonly contents = new Map<string, string>();

  constructor(private readonly mirrors: GitMirrors) {}

  resolve(repositoryId: string, ref: string): string {
    return memo(this.commits, `${repositoryId}\0${ref}`, () => this.mirrors.resolve(repositoryId, ref));
  }

  /** A copy each time: callers may sort or filter it. */
  listFiles(repositoryId: string, sha: string, path = ''): string[] {
    return [
      ...memo(this.listings, `${repositoryId}\0${sha}\0${path}`, () =>
        this.mirrors.listFiles(repositoryId, sha, path),
      ),
    ];
  }

  readFile(repositoryId: string, sha: string, path: string): string {
    return memo(this.contents, `${repositoryId}\0${sha}\0${path}`, () =>
      this.mirrors.readFile(repositoryId, sha, path),
    );
  }

  hasMirror(repositoryId: string): boolean {
    return this.mirrors.hasMirror(repositoryId);
  }
}

function memo<T>(cache: Map<string, T>, key: string, read: () => T): T {
  const hit = cache.get(key);
  if (hit !== undefined) return hit;
  const value = read();
  cache.set(key, value);
  return value;
}
