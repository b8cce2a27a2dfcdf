import { GitMirrorError, type GitMirrors } from '../sources/git/git-mirror.js';

/**
 * The refs every hub replica shares (`RepositoryRef`, written by source-sync) and a way to bring this
 * replica's own mirror up to them.
 */
export interface SharedRefs {
  /** ref → commit, as the latest recorded fetch of the repository (on any replica) resolved them. */
  load(repositoryId: string): Promise<Map<string, string>>;
  /** Fetches this replica's mirror of the repository; records nothing. */
  fetchMirror(repositoryId: string): Promise<void>;
}

/** A ref an expansion resolved, and to what: compared with the stored refs when its result is written. */
export interface ResolvedRef {
  repositoryId: string;
  ref: string;
  sha: string;
}

/**
 * The Git reads of one expansion, each done once. A ref means the commit the database records for
 * it (`RepositoryRef`), not what this replica's mirror says: replicas fetch at different moments, and
 * an expansion on a replica whose mirror is behind used to move targets back to an older commit.
 * Only a ref nobody tracks yet (no stored row) is resolved from the mirror. `prepare` makes sure the
 * mirror holds every recorded commit, fetching it first when it does not.
 *
 * Every mirror read spawns `git` synchronously (~5–10 ms on a busy machine), and an expansion asks
 * the same questions over and over: the template's `targetRevision` is resolved once per target, and
 * a matrix re-runs its git generator once per cluster. At 1,000 clusters × 20 directories that was
 * 20,000+ spawns — most of the expansion's time. Within one expansion a ref means one commit, which
 * is also what makes its targets consistent with each other. Errors are not cached: they end the
 * expansion anyway.
 */
export class ExpansionGitReads {
  private readonly commits = new Map<string, string>();
  private readonly listings = new Map<string, string[]>();
  private readonly contents = new Map<string, string>();
  /** repositoryId → the stored refs, once prepared. */
  private readonly stored = new Map<string, Map<string, string>>();
  /** repositoryId → recorded commits still missing from the mirror (and the fetch's error, if it failed). */
  private readonly unavailable = new Map<string, { shas: Set<string>; fetchError: string | undefined }>();
  private readonly used = new Map<string, ResolvedRef>();

  constructor(
    private readonly mirrors: GitMirrors,
    private readonly shared: SharedRefs,
  ) {}

  /**
   * Loads the repository's stored refs and fetches the mirror if it lacks any of their commits.
   * `fetch` false (the preview): never fetch; a missing commit fails the ref that needs it.
   */
  async prepare(repositoryId: string, opts: { fetch: boolean }): Promise<void> {
    if (this.stored.has(repositoryId)) return;
    const refs = await this.shared.load(repositoryId);
    let missing = this.mirrors.missingCommits(repositoryId, [...new Set(refs.values())]);
    let fetchError: string | undefined;
    // A stored ref whose commit left the remote (a deleted branch keeps its row) would otherwise cost
    // every expansion a fetch: only commits no fetch has failed to bring are worth one.
    if (opts.fetch && missing.some((sha) => !this.mirrors.knownNotOnRemote(repositoryId, sha))) {
      try {
        await this.shared.fetchMirror(repositoryId);
        missing = this.mirrors.missingCommits(repositoryId, missing);
        this.mirrors.noteNotOnRemote(repositoryId, missing);
      } catch (e) {
        fetchError = e instanceof Error ? e.message : String(e);
      }
    }
    this.stored.set(repositoryId, refs);
    if (missing.length > 0) this.unavailable.set(repositoryId, { shas: new Set(missing), fetchError });
  }

  resolve(repositoryId: string, ref: string): string {
    return memo(this.commits, `${repositoryId}\0${ref}`, () => {
      const recorded = this.stored.get(repositoryId)?.get(ref.trim() === '' ? 'HEAD' : ref.trim());
      const sha = recorded ?? this.mirrors.resolve(repositoryId, ref);
      const gone = this.unavailable.get(repositoryId);
      if (gone?.shas.has(sha)) {
        const why =
          gone.fetchError ??
          (this.mirrors.knownNotOnRemote(repositoryId, sha)
            ? 'a fetch did not bring it: it is not on the remote any more (force-pushed away?)'
            : 'this hub replica has not fetched it yet');
        throw new GitMirrorError(
          'unknown-revision',
          `"${ref}" is recorded at ${sha.slice(0, 12)}, which this hub's mirror lacks: ${why}`,
        );
      }
      this.used.set(`${repositoryId}\0${ref}`, { repositoryId, ref, sha });
      return sha;
    });
  }

  /** Every ref this expansion resolved: its result is stale once any of them is stored at another commit. */
  resolvedRefs(): ResolvedRef[] {
    return [...this.used.values()];
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
