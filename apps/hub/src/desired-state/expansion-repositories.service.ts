import { systemActor } from '@flotilla/contract';
// The Git repositories an expansion reads: registered, fetched and prepared once each, and their refs resolved.
import { Injectable } from '@nestjs/common';
import type { RepositoryFiles } from '@flotilla/generators';
import { HubError } from '../common/hub-error.js';
import { Database } from '../db/database.js';
import type { Repository } from '../generated/prisma/client.js';
import { GitMirrorError } from '../sources/git/git-mirror.js';
import { GitMirrorsService } from '../sources/git/git-mirrors.service.js';
import { RepositoriesService } from '../sources/repositories/repositories.service.js';
import { SourceVerifications } from '../sources/verification/source-verifications.service.js';
import { withoutCredentials } from '../sources/repositories/repository-url.js';
import { ExpansionError } from './expansion-error.js';
import { ExpansionGitReads, type SharedRefs } from './expansion-git-reads.js';

/** What the repository reads of one expansion share: each repository prepared once, each Git question asked once. */
export interface RepositoryScope {
  appSetName: string;
  /**
   * False for the preview: use only repositories already fetched, register and fetch nothing, and
   * judge signed commits without recording a verdict or auditing a refusal.
   */
  register: boolean;
  git: ExpansionGitReads;
  /** The repositories prepared so far, by the URL the appset wrote. */
  repoByUrl: Map<string, Repository>;
}

@Injectable()
export class ExpansionRepositories {
  constructor(
    private readonly db: Database,
    private readonly mirrors: GitMirrorsService,
    private readonly repos: RepositoriesService,
    private readonly verifications: SourceVerifications,
  ) {}

  /**
   * The commit `ref` of `repo` means in this expansion, if the repository's verification mode lets
   * it be released; else `source-unverified` (the commit, the signer found) and, like every
   * expansion error, no target changes: each keeps its released revision.
   */
  async releasableRevision(
    scope: RepositoryScope,
    repo: Repository,
    ref: string,
    at: string,
  ): Promise<string> {
    // A templated ref is known only now: one no poll keeps fresh is fetched before it is resolved.
    await scope.git.track(repo.id, ref);
    const sha = resolveRevision(scope.git, repo, ref, at);
    // A preview (it registers nothing) records no verdict and audits nothing either.
    const verdict = await this.verifications.verdict(repo, sha, { record: scope.register });
    if (!verdict.verified) throw new ExpansionError('source-unverified', verdict.message, at);
    return sha;
  }

  /** The refs every replica shares, and this replica's mirror brought up to them when it lags. */
  private readonly sharedRefs: SharedRefs = {
    load: async (repositoryId) => {
      const rows = await this.db.prisma.repositoryRef.findMany({ where: { repositoryId } });
      return new Map(rows.map((r) => [r.ref, r.sha]));
    },
    fetchMirror: (repositoryId) => this.repos.fetchMirror(repositoryId),
    record: (repositoryId, refs) => this.repos.recordRefs(repositoryId, refs),
  };

  /** The Git reads of a new expansion, none asked yet. */
  gitReads(): ExpansionGitReads {
    return new ExpansionGitReads(this.mirrors.mirrors, this.sharedRefs);
  }

  /**
   * The repository of `url` ready for this expansion's reads (registered, fetched, prepared), once
   * per expansion however many sources name it. `refs`: the ones the document names literally for
   * this URL, recorded up front when no poll tracks them yet (generators read synchronously).
   */
  async prepared(url: string, scope: RepositoryScope, refs: Iterable<string> = []): Promise<Repository> {
    const known = scope.repoByUrl.get(url);
    if (known) return known;
    const repo = await this.readyRepository(url, scope.appSetName, scope.register);
    await scope.git.prepare(repo.id, { fetch: scope.register, refs });
    scope.repoByUrl.set(url, repo);
    return repo;
  }

  /** A registered repository with a usable mirror; fetched now if it never was. */
  private async readyRepository(url: string, appSetName: string, register: boolean): Promise<Repository> {
    // Generated URLs ({{…}} in repoURL) meet the same check as literal ones.
    try {
      this.repos.checkUrl(url, 'repoURL');
    } catch (e) {
      if (e instanceof HubError)
        throw new ExpansionError(e.code, e.message, `repoURL ${withoutCredentials(url)}`);
      throw e;
    }
    if (!register) {
      const known = await this.db.prisma.repository.findUnique({ where: { url } });
      if (!known || known.lastFetchedAt === null || !this.mirrors.mirrors.hasMirror(known.id)) {
        throw new ExpansionError(
          'repository-not-fetched',
          `repository ${url} has not been fetched yet; the preview fetches nothing — POST /api/v1/repositories first`,
          `repoURL ${url}`,
        );
      }
      return known;
    }
    let repo = await this.repos.register(url, systemActor('expansion'), undefined, `appset:${appSetName}`);
    if (!this.mirrors.mirrors.hasMirror(repo.id) || repo.lastFetchedAt === null) {
      const r = await this.repos.syncNow(repo.id);
      repo = await this.db.prisma.repository.findUniqueOrThrow({ where: { id: repo.id } });
      if (!r.ok && repo.lastFetchedAt === null) {
        throw new ExpansionError(
          'repository-unreachable',
          r.error ?? `cannot fetch ${url}`,
          `repoURL ${url}`,
        );
      }
    }
    return repo;
  }
}

/** What a git generator reads of `repoURL` at `revision`: only repositories the expansion prepared up front. */
export function generatorFiles(scope: RepositoryScope, repoURL: string, revision: string): RepositoryFiles {
  const repo = scope.repoByUrl.get(repoURL);
  if (!repo) {
    throw new ExpansionError(
      'repository-unknown',
      `repository ${repoURL} is read by a generator but was not fetched; write its URL literally`,
      `repoURL ${repoURL}`,
    );
  }
  const sha = resolveRevision(scope.git, repo, revision, `git generator ${repoURL}`);
  const { git } = scope;
  return {
    listFiles: () => git.listFiles(repo.id, sha),
    readFile: (path) => git.readFile(repo.id, sha, path),
  };
}

/** The commit `ref` of `repo` means in this expansion; `at` names the field that asked, for the error. */
export function resolveRevision(git: ExpansionGitReads, repo: Repository, ref: string, at: string): string {
  try {
    return git.resolve(repo.id, ref);
  } catch (e) {
    if (e instanceof GitMirrorError)
      throw new ExpansionError('unknown-revision', `${repo.url}: ${e.message}`, at);
    throw e;
  }
}
