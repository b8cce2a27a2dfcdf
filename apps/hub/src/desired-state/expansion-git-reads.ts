import { FULL_SHA, GitMirrorError, type GitMirrors } from '../sources/git/git-mirror.js';

/**
 * The refs every hub replica shares (`RepositoryRef`, written by source-sync) and a way to bring this
 * replica's own mirror up to them.
 */
export interface SharedRefs {
  /** ref → commit, as the latest recorded fetch of the repository (on any replica) resolved them. */
  load(repositoryId: string): Promise<Map<string, string>>;
  /** Fetches this replica's mirror of the repository; records nothing. */
  fetchMirror(repositoryId: string): Promise<void>;
  /**
   * Fetches this replica's mirror and records the commits `refs` name now; ref → commit recorded,
   * without the refs the remote lacks.
   */
  record(repositoryId: string, refs: string[]): Promise<Map<string, string>>;
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
 * `prepare` makes sure the mirror holds every recorded commit, fetching it first when it does not.
 *
 * A ref without a row is one no poll keeps fresh: never asked for, or pruned by a poll once nothing
 * read it. Its row, had it stayed, would say where the ref was when it was last read, and the mirror
 * is only as fresh as this replica's last fetch. So such a ref is fetched and recorded before it is
 * resolved (`prepare` for the refs the document names literally, `track` for templated ones): one
 * fetch per repository per expansion at most, none for a tracked ref. The preview fetches nothing
 * and reads such a ref from the mirror.
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
  /** repositoryId → whether this expansion may fetch it (not a preview). */
  private readonly mayFetch = new Map<string, boolean>();
  /** Repositories this expansion already fetched for refs without a row: the mirror is fresh now. */
  private readonly fetchedForRefs = new Set<string>();
  /** repositoryId → why recording its unrecorded refs failed: those refs fail rather than go stale. */
  private readonly recordErrors = new Map<string, string>();

  constructor(
    private readonly mirrors: GitMirrors,
    private readonly shared: SharedRefs,
  ) {}

  /**
   * Loads the repository's stored refs and fetches the mirror if it lacks any of their commits, then
   * records `refs` (the ones the document names) that have no row. `fetch` false (the preview):
   * never fetch; a missing commit fails the ref that needs it.
   */
  async prepare(repositoryId: string, opts: { fetch: boolean; refs?: Iterable<string> }): Promise<void> {
    if (this.stored.has(repositoryId)) return this.track(repositoryId, ...(opts.refs ?? []));
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
    this.mayFetch.set(repositoryId, opts.fetch);
    if (missing.length > 0) this.unavailable.set(repositoryId, { shas: new Set(missing), fetchError });
    await this.track(repositoryId, ...(opts.refs ?? []));
  }

  /**
   * Records `refs` of a prepared repository that have no row yet, fetching first (see the class
   * comment); a no-op for tracked refs, full commit ids, and in a preview.
   */
  async track(repositoryId: string, ...refs: string[]): Promise<void> {
    const stored = this.stored.get(repositoryId);
    if (!stored || !this.mayFetch.get(repositoryId) || this.fetchedForRefs.has(repositoryId)) return;
    const unrecorded = [...new Set(refs.map(rowName))].filter(
      (r) => !stored.has(r) && !FULL_SHA.test(r) && !this.mirrors.knownRefNotFound(repositoryId, r),
    );
    if (unrecorded.length === 0) return;
    this.fetchedForRefs.add(repositoryId);
    try {
      const recorded = await this.shared.record(repositoryId, unrecorded);
      for (const [ref, sha] of recorded) stored.set(ref, sha);
      this.mirrors.noteRefsNotFound(
        repositoryId,
        unrecorded.filter((r) => !recorded.has(r)),
      );
    } catch (e) {
      this.recordErrors.set(repositoryId, e instanceof Error ? e.message : String(e));
    }
  }

  resolve(repositoryId: string, ref: string): string {
    return memo(this.commits, `${repositoryId}\0${ref}`, () => {
      const recorded = this.stored.get(repositoryId)?.get(rowName(ref));
      const recordError = this.recordErrors.get(repositoryId);
      if (recorded === undefined && recordError !== undefined && !FULL_SHA.test(rowName(ref))) {
        // The mirror may be as old as this replica's last fetch: better no render than a stale one.
        throw new GitMirrorError(
          'fetch-failed',
          `"${ref}" is not tracked yet and fetching its newest commit failed: ${recordError}`,
        );
      }
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

/** The name a ref's row has: '' means HEAD. */
function rowName(ref: string): string {
  return ref.trim() === '' ? 'HEAD' : ref.trim();
}

function memo<T>(cache: Map<string, T>, key: string, read: () => T): T {
  const hit = cache.get(key);
  if (hit !== undefined) return hit;
  const value = read();
  cache.set(key, value);
  return value;
}
