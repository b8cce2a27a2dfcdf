// The Git reads of one plan: the fleet repository at the side's commit, every other repository at its ref, from the hub's mirrors.
import { mkdtempSync, mkdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { RepositoryFiles } from '@flotilla/generators';
import type { GitMirrors } from '../sources/git/git-mirror.js';

/** A Git read a plan could not do; `code` is what the API answers. */
export class PlanReadError extends Error {
  override readonly name = 'PlanReadError';
  constructor(
    readonly code: 'repository-not-fetched' | 'unknown-revision',
    message: string,
  ) {
    super(message);
  }
}

/** What a plan knows of the hub's repositories: id by URL, and which one is the fleet repository. */
export interface PlanRepositoryIndex {
  fleet: { id: string; url: string };
  /** Registered repositories with a mirror, by URL as registered. */
  byUrl: ReadonlyMap<string, string>;
}

/**
 * One side's view of the repositories. The fleet repository is read at the side's commit whatever
 * revision a source names (its application manifests change with the fleet, as offline `--repo`
 * reads a checkout at `--base`/`--head`); any other repository at the commit its ref names in the
 * hub's mirror now. Nothing is fetched or registered: a repository the hub has not fetched fails the
 * plan, naming it.
 */
export class PlanRepositories {
  private readonly files = new Map<string, RepositoryFiles>();
  private readonly checkouts = new Map<string, Promise<string>>();
  private root: string | null = null;

  constructor(
    private readonly mirrors: GitMirrors,
    private readonly index: PlanRepositoryIndex,
  ) {}

  get fleetId(): string {
    return this.index.fleet.id;
  }

  /** The repository of `url` and the commit `revision` means for the side at `sideCommit`. */
  commitOf(url: string, revision: string, sideCommit: string): { id: string; sha: string } {
    if (sameRepository(url, this.index.fleet.url)) return { id: this.index.fleet.id, sha: sideCommit };
    const id = this.idOf(url);
    if (id === undefined)
      throw new PlanReadError(
        'repository-not-fetched',
        `repository ${url} has not been fetched by the hub; a plan fetches nothing but the fleet repository — POST /api/v1/repositories first`,
      );
    try {
      return { id, sha: this.mirrors.resolve(id, revision) };
    } catch (e) {
      throw new PlanReadError('unknown-revision', `${url}: ${(e as Error).message}`);
    }
  }

  /** What a git generator reads: the repository's files at the commit, from the bare mirror. */
  repository(url: string, revision: string, sideCommit: string): RepositoryFiles {
    const { id, sha } = this.commitOf(url, revision, sideCommit);
    const key = `${id}\0${sha}`;
    let files = this.files.get(key);
    if (!files) {
      const mirrors = this.mirrors;
      let listing: string[] | undefined;
      files = {
        listFiles: () => [...(listing ??= mirrors.listFiles(id, sha))],
        readFile: (path) => mirrors.readFile(id, sha, path),
      };
      this.files.set(key, files);
    }
    return files;
  }

  /** A working tree of the commit (Kustomize and Helm need one), written once per plan. */
  checkout(id: string, sha: string): Promise<string> {
    const key = `${id}\0${sha}`;
    let dir = this.checkouts.get(key);
    if (!dir) {
      this.root ??= mkdtempSync(join(tmpdir(), 'flotilla-hub-plan-'));
      const target = join(this.root, String(this.checkouts.size));
      mkdirSync(target);
      dir = this.mirrors.checkout(id, sha, target).then(() => target);
      this.checkouts.set(key, dir);
    }
    return dir;
  }

  /** The temporary working trees, for error messages that should name repository paths only. */
  async checkoutDirs(): Promise<string[]> {
    return Promise.all(this.checkouts.values());
  }

  /** Removes every working tree the plan wrote. */
  remove(): void {
    if (this.root) rmSync(this.root, { recursive: true, force: true });
    this.root = null;
  }

  private idOf(url: string): string | undefined {
    const exact = this.index.byUrl.get(url);
    if (exact !== undefined) return exact;
    for (const [known, id] of this.index.byUrl) if (sameRepository(known, url)) return id;
    return undefined;
  }
}

/** Two spellings of one repository URL: a trailing slash or `.git` does not make another repository. */
export function sameRepository(a: string, b: string): boolean {
  const norm = (u: string) =>
    u
      .trim()
      .replace(/\/+$/, '')
      .replace(/\.git$/, '');
  return norm(a) === norm(b);
}
