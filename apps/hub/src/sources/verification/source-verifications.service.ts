import { systemActor } from '@flotilla/contract';
import { Injectable, Logger } from '@nestjs/common';
import { AuditLog } from '../../audit/audit.service.js';
import { Database } from '../../db/database.js';
import type { Repository } from '../../generated/prisma/client.js';
import { GitMirrorsService } from '../git/git-mirrors.service.js';
import { withoutCredentials } from '../repositories/repository-url.js';
import { describeSignature, firstUnverified, signerOf } from './commit-signatures.js';
import { commitSignatures, CommitVerifierError, isAncestor } from './commit-verifier.js';

/** A commit's verdict under its repository's mode and keys. */
export interface SourceVerdict {
  verified: boolean;
  /** The commit that failed (strict: perhaps an older one than asked); null when verified. */
  failedCommit: string | null;
  /** The signer and key found on the failed commit (or the verified one), or "unsigned". */
  signer: string;
  /** A sentence a person can act on: which repository, which commit, what git said. */
  message: string;
}

const VERIFIED_WITHOUT_REQUIREMENT: SourceVerdict = {
  verified: true,
  failedCommit: null,
  signer: '',
  message: 'the repository does not require signed commits',
};

/** Verdicts kept in memory per replica; past this, the oldest are dropped (the table still has them). */
const MEMORY_LIMIT = 10_000;
/**
 * Strict: how many of the repository's latest verified commits are tried as the last verified one
 * (retention keeps at least these).
 */
export const STRICT_BASELINE_CANDIDATES = 20;

/**
 * Whether a commit may be released under its repository's verification mode. Each (repository,
 * commit, key-list digest) is judged once — by git, in `commit-verifier.ts` — and stored in
 * `SourceVerification`: every target of every appset at that commit, on every replica, reads the
 * same verdict, and a changed key list (a new digest) is judged again. A refusal is audited once
 * (`source.unverified`), when it is first found.
 */
@Injectable()
export class SourceVerifications {
  private readonly logger = new Logger(SourceVerifications.name);
  private readonly recent = new Map<string, Promise<SourceVerdict>>();

  constructor(
    private readonly db: Database,
    private readonly mirrors: GitMirrorsService,
    private readonly audit: AuditLog,
  ) {}

  /**
   * The verdict on `commit` of `repo` (its mirror must hold the commit). `record: false` (a preview,
   * which a viewer may ask for) reads a known verdict or asks git, and writes nothing: no verdict
   * row, no `source.unverified` event, nothing remembered — the expansion that releases the commit
   * judges and records it as if no preview had asked.
   */
  verdict(
    repo: Repository,
    commit: string,
    options: { record: boolean } = { record: true },
  ): Promise<SourceVerdict> {
    if (repo.verificationMode === 'none') return Promise.resolve(VERIFIED_WITHOUT_REQUIREMENT);
    const key = `${repo.id}\0${commit}\0${repo.verificationDigest}`;
    const known = this.recent.get(key);
    if (known) return known;
    if (!options.record) return this.judgeWithoutRecording(repo, commit);
    const judged = this.judgeOnce(repo, commit).catch((e: unknown) => {
      // Git could not answer this time (a timeout, a commit gone from the mirror): still refused,
      // but neither stored nor remembered — the next expansion asks again.
      this.recent.delete(key);
      return cannotVerifyNow(repo, commit, e);
    });
    this.recent.set(key, judged);
    if (this.recent.size > MEMORY_LIMIT) this.recent.delete(this.recent.keys().next().value!);
    return judged;
  }

  private async judgeWithoutRecording(repo: Repository, commit: string): Promise<SourceVerdict> {
    const stored = await this.db.prisma.sourceVerification.findUnique({
      where: {
        repositoryId_commit_digest: { repositoryId: repo.id, commit, digest: repo.verificationDigest },
      },
    });
    if (stored) return stored;
    return this.judge(repo, commit).catch((e: unknown) => cannotVerifyNow(repo, commit, e));
  }

  private async judgeOnce(repo: Repository, commit: string): Promise<SourceVerdict> {
    const where = { repositoryId: repo.id, commit, digest: repo.verificationDigest };
    const stored = await this.db.prisma.sourceVerification.findUnique({
      where: { repositoryId_commit_digest: where },
    });
    if (stored) return stored;
    const verdict = await this.judge(repo, commit);
    const { count } = await this.db.prisma.sourceVerification.createMany({
      data: [{ ...where, mode: repo.verificationMode, ...verdict }],
      skipDuplicates: true,
    });
    // Another replica judged it at the same moment: it audited the refusal.
    if (count === 1 && !verdict.verified) {
      this.logger.warn(`${withoutCredentials(repo.url)}: ${verdict.message}`);
      await this.audit.record({
        actor: systemActor('source-verification'),
        action: 'source.unverified',
        scope: `repository:${withoutCredentials(repo.url)}`,
        details: {
          repository: withoutCredentials(repo.url),
          commit,
          failedCommit: verdict.failedCommit,
          signer: verdict.signer,
          mode: repo.verificationMode,
          message: verdict.message,
        },
      });
    }
    return verdict;
  }

  private async judge(repo: Repository, commit: string): Promise<SourceVerdict> {
    const dir = this.mirrors.mirrors.dirOf(repo.id);
    const since = repo.verificationMode === 'strict' ? await this.lastVerified(repo, dir, commit) : undefined;
    const keys = { allowedSigners: repo.allowedSigners, gpgKeyring: repo.gpgKeys };
    const signatures = await commitSignatures(dir, { commit, since }, keys);
    const failed = firstUnverified(signatures);
    const mode =
      repo.verificationMode === 'strict'
        ? `strict (every commit since ${since ? since.slice(0, 12) : 'the first verified one'})`
        : 'head';
    if (!failed)
      return {
        verified: true,
        failedCommit: null,
        signer: signatures[0] ? signerOf(signatures[0]) : '',
        message: `verified (${mode}): ${signatures.length} commit(s) signed by allowed keys`,
      };
    const below = failed.commit === commit ? '' : ` below ${commit.slice(0, 12)}`;
    return {
      verified: false,
      failedCommit: failed.commit,
      signer: signerOf(failed),
      message: `source unverified (${mode}) in ${withoutCredentials(repo.url)}: ${describeSignature(failed)}${below}`,
    };
  }

  /**
   * Strict: the newest verified commit (in any mode, under any key list) that `commit` descends
   * from; undefined when there is none yet, and then only `commit` itself is judged (see
   * docs/verified-sources.md, "the first verified commit").
   */
  private async lastVerified(repo: Repository, dir: string, commit: string): Promise<string | undefined> {
    const rows = await this.db.prisma.sourceVerification.findMany({
      where: { repositoryId: repo.id, verified: true },
      orderBy: { createdAt: 'desc' },
      take: STRICT_BASELINE_CANDIDATES,
      select: { commit: true },
    });
    for (const { commit: candidate } of rows)
      if (candidate !== commit && (await isAncestor(dir, candidate, commit))) return candidate;
    return undefined;
  }
}

/** Git could not answer (a timeout, a commit gone from the mirror): refused for now. */
function cannotVerifyNow(repo: Repository, commit: string, e: unknown): SourceVerdict {
  if (!(e instanceof CommitVerifierError)) throw e;
  return {
    verified: false,
    failedCommit: commit,
    signer: 'unknown',
    message: `source unverified in ${withoutCredentials(repo.url)}: commit ${commit.slice(0, 12)} cannot be verified now: ${e.message}`,
  };
}
