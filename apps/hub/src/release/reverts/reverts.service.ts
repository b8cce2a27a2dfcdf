import { type AuditActor, type QueuePayloads, type RevertView, systemActor } from '@flotilla/contract';
import { join } from 'node:path';
import { Inject, Injectable, Logger } from '@nestjs/common';
import { z } from 'zod';
import { HUB_CONFIG, type HubConfig } from '../../config/hub-config.js';
import { Database } from '../../db/database.js';
import { HubError, parseInput } from '../../common/hub-error.js';
import { AuditLog } from '../../audit/audit.service.js';
import { GitMirrorsService } from '../../sources/git/git-mirrors.service.js';
import { RepositoriesService } from '../../sources/repositories/repositories.service.js';
import {
  WriteAccessService,
  type OpenedWriteAccess,
} from '../../sources/repositories/write-access.service.js';
import type { RevertRequest } from '../../generated/prisma/client.js';
import {
  deleteRemoteBranch,
  pushRevertBranch,
  RevertBranchError,
  type RemoteAccess,
} from './revert-branch.js';
import { RevertRangeService, type RevertRange } from './revert-range.service.js';
import { openPullRequest, PullRequestError } from './pull-requests.js';

export const revertRequestSchema = z
  .object({
    /** The revision to restore (commit, branch or tag); default: the revision the targets are pinned to. */
    to: z.string().trim().min(1).regex(/^[^-]/, 'may not start with -').optional(),
    reason: z.string().trim().max(1000).optional(),
  })
  .strict();

type Scope = { appSet: string } | { target: string };

/**
 * Rollback by revert at the hub: finds what to revert (RevertRangeService), writes the revert on a
 * new branch of the repository and opens a pull request through the Git host's API. Either all of
 * it happens and is recorded (`revert.opened`, the pins marked as waiting for it), or nothing is
 * left behind: a branch whose pull request the host refused is deleted again (`revert.failed`).
 */
@Injectable()
export class RevertsService {
  private readonly logger = new Logger(RevertsService.name);

  constructor(
    private readonly db: Database,
    private readonly audit: AuditLog,
    private readonly ranges: RevertRangeService,
    private readonly writeAccess: WriteAccessService,
    private readonly mirrors: GitMirrorsService,
    private readonly repositories: RepositoriesService,
    @Inject(HUB_CONFIG) private readonly config: HubConfig,
  ) {}

  /** `POST /api/v1/{targets|appsets}/:name/revert`. */
  async open(scope: Scope, body: unknown, actor: AuditActor): Promise<RevertView> {
    const req = parseInput(revertRequestSchema, body ?? {});
    const range = await this.ranges.find(scope, req.to);
    const access = await this.writeAccess.open(range.repository.url);
    if (range.commits.length === 0)
      throw new HubError(
        409,
        'nothing-to-revert',
        `nothing to revert: ${range.repository.url} at ${range.head.slice(0, 12)} renders what it rendered at ${range.to.slice(0, 12)}`,
      );
    const branch = branchOf(range);
    const claimed = await this.claim(range, branch, actor);
    if ('existing' in claimed) return this.recordExisting(range, claimed.existing);
    return this.write(range, access, claimed.row, actor, req.reason ?? '');
  }

  /**
   * After an automatic rollback (the `revert` job): opens the revert for the pinned target when the
   * hub may (REVERT_AFTER_ROLLBACK) and its repository has write access. A revert that cannot be
   * opened is logged and audited, never retried into a second branch.
   */
  async afterRollback({ targetId, from }: QueuePayloads['revert']): Promise<void> {
    if (!this.config.reverts.afterRollback) return;
    const target = await this.db.prisma.target.findUnique({
      where: { id: targetId },
      include: { pin: true },
    });
    if (!target?.pin || !target.pin.actor.startsWith('agent:') || target.desiredRevision !== from) return;
    const repo = await this.db.prisma.repository.findUnique({ where: { url: target.repoUrl } });
    if (!repo?.writeCredentialCiphertext) return;
    try {
      const view = await this.open(
        { target: target.name },
        { to: target.pin.revision, reason: target.pin.reason },
        systemActor('automatic-rollback'),
      );
      this.logger.log(`target ${target.name}: revert opened at ${view.pullRequest.url}`);
    } catch (e) {
      if (!(e instanceof HubError)) throw e;
      this.logger.warn(`target ${target.name}: no revert opened after the automatic rollback: ${e.message}`);
    }
  }

  /** Claims the branch with a row (another request for the same revert finds it), or finds it open. */
  private async claim(
    range: RevertRange,
    branch: string,
    actor: AuditActor,
  ): Promise<{ row: RevertRequest } | { existing: RevertRequest }> {
    const key = { repositoryId_branch: { repositoryId: range.repository.id, branch } };
    const found = await this.db.prisma.revertRequest.findUnique({ where: key });
    if (found?.status === 'Open') return { existing: found };
    if (found)
      throw new HubError(
        409,
        'revert-in-progress',
        `the revert on branch ${branch} is being opened; ask again in a moment`,
      );
    try {
      const row = await this.db.prisma.revertRequest.create({
        data: {
          repositoryId: range.repository.id,
          branch,
          appSetName: range.appSet,
          targetName: range.target,
          toRevision: range.to,
          headRevision: range.head,
          commits: range.commits,
          actor,
        },
      });
      return { row };
    } catch {
      throw new HubError(
        409,
        'revert-in-progress',
        `the revert on branch ${branch} is being opened; ask again in a moment`,
      );
    }
  }

  private async write(
    range: RevertRange,
    access: OpenedWriteAccess,
    row: RevertRequest,
    actor: AuditActor,
    reason: string,
  ): Promise<RevertView> {
    const remote: RemoteAccess = {
      url: range.repository.url,
      auth: access.push,
      knownHostsFile: join(this.config.dataDir, 'repos', `${range.repository.id}.push.known_hosts`),
      timeouts: {
        connectMs: this.config.git.connectTimeoutSeconds * 1000,
        idleMs: this.config.git.idleTimeoutSeconds * 1000,
        maxMs: this.config.git.fetchMaxSeconds * 1000,
      },
    };
    const base = range.followedBranch ?? access.baseBranch ?? 'main';
    let revert: string | null = null;
    let pullRequest;
    try {
      revert = await pushRevertBranch(
        {
          mirrorDir: this.mirrors.mirrors.dirOf(range.repository.id),
          head: range.head,
          commits: [...range.commits].reverse().map((c) => c.commit),
          branch: row.branch,
          message: commitMessage(range),
          author: this.config.reverts.author,
        },
        remote,
      );
      pullRequest = await openPullRequest(access.host, {
        title: `Revert what changed ${what(range)} since ${range.to.slice(0, 12)}`,
        body: pullRequestBody(range, reason),
        head: row.branch,
        base,
      });
    } catch (e) {
      // Whatever went wrong, nothing stays half done: no branch, no claim, the failure audited.
      if (revert !== null) await this.deleteBranch(row.branch, remote);
      throw await this.recordFailure(range, row, actor, e);
    }
    const opened = { ...row, revertCommit: revert, url: pullRequest.url, number: pullRequest.number };
    const restores = await this.restores(range, revert);
    await this.recordOpened(range, opened, { base, restores, reason, actor });
    return viewOf(range, opened, restores, false);
  }

  /** The claim becomes an open revert, its pins wait for it, and `revert.opened` says it all. */
  private async recordOpened(
    range: RevertRange,
    opened: RevertRequest & { revertCommit: string; url: string; number: number },
    how: { base: string; restores: boolean | null; reason: string; actor: AuditActor },
  ): Promise<void> {
    const pins = pinsReplaced(range);
    await this.db.prisma.$transaction(async (tx) => {
      await tx.revertRequest.update({
        where: { id: opened.id },
        data: { status: 'Open', revertCommit: opened.revertCommit, url: opened.url, number: opened.number },
      });
      await tx.targetPin.updateMany({
        where: { targetId: { in: pins.map((p) => p.targetId) } },
        data: { revertUrl: opened.url },
      });
      await this.audit.record(
        {
          actor: how.actor,
          action: 'revert.opened',
          scope: scopeOf(range),
          details: {
            repository: range.repository.url,
            pullRequest: opened.url,
            number: opened.number,
            branch: opened.branch,
            base: how.base,
            revert: opened.revertCommit,
            to: range.to,
            head: range.head,
            commits: range.commits,
            restores: how.restores,
            pins: pins.map(({ targetId: _, ...p }) => p),
            ...(how.reason && { reason: how.reason }),
          },
        },
        tx,
      );
    });
  }

  private async recordFailure(range: RevertRange, row: RevertRequest, actor: AuditActor, e: unknown) {
    const failure = failureOf(e);
    await this.db.prisma.revertRequest.delete({ where: { id: row.id } });
    await this.audit.record({
      actor,
      action: 'revert.failed',
      scope: scopeOf(range),
      details: {
        repository: range.repository.url,
        branch: row.branch,
        to: range.to,
        head: range.head,
        error: failure?.message ?? String(e),
      },
    });
    return failure ?? e;
  }

  /** The same revert asked again (or a second rollback of the appset's revision): its pins wait for it too. */
  private async recordExisting(range: RevertRange, row: RevertRequest): Promise<RevertView> {
    const pins = pinsReplaced(range);
    await this.db.prisma.targetPin.updateMany({
      where: { targetId: { in: pins.map((p) => p.targetId) }, revertUrl: null },
      data: { revertUrl: row.url },
    });
    return viewOf(range, row, null, true);
  }

  /** Whether Git renders the pinned content once the revert is merged (null when that cannot be told). */
  private async restores(range: RevertRange, revert: string): Promise<boolean | null> {
    try {
      // The revert commit lives on the remote's new branch: the mirror has it after one fetch.
      await this.repositories.fetchMirror(range.repository.id);
      return (await range.fingerprintAt(revert)) === range.wanted;
    } catch (e) {
      this.logger.warn(
        `cannot tell whether ${revert.slice(0, 12)} restores ${range.to.slice(0, 12)}: ${String(e)}`,
      );
      return null;
    }
  }

  private async deleteBranch(branch: string, remote: RemoteAccess): Promise<void> {
    try {
      await deleteRemoteBranch(branch, remote);
    } catch (e) {
      this.logger.error(`branch ${branch} of ${remote.url} could not be deleted: ${String(e)}`);
    }
  }
}

/**
 * One branch per appset and head: the revert of one bad revision, whoever asks first (an automatic
 * rollback on two canaries, or a person after it, finds the one already open).
 */
function branchOf(range: RevertRange): string {
  return `flotilla/revert-${range.appSet}-${range.head.slice(0, 12)}`;
}

function what(range: RevertRange): string {
  return range.target === null ? `appset ${range.appSet}` : `target ${range.target} (appset ${range.appSet})`;
}

function scopeOf(range: RevertRange): string {
  return range.target === null ? `appset:${range.appSet}` : `target:${range.target}`;
}

function commitMessage(range: RevertRange): string {
  return [
    `Revert what changed ${what(range)} since ${range.to.slice(0, 12)}`,
    '',
    ...range.commits.map((c) => `Reverts ${c.commit.slice(0, 12)} ${c.subject}`),
    '',
    `Written by the Flotilla hub (rollback by revert to ${range.to}).`,
  ].join('\n');
}

function pullRequestBody(range: RevertRange, reason: string): string {
  const pinned = pinsReplaced(range);
  return [
    `Flotilla rolled ${what(range)} back to \`${range.to.slice(0, 12)}\`${reason ? `: ${reason}` : ''}.`,
    '',
    'This reverts the commits that changed what it renders:',
    ...range.commits.map((c) => `- ${c.commit.slice(0, 12)} ${c.subject}`),
    '',
    pinned.length > 0
      ? `Once merged, Git renders the pinned content again and the hub lifts the pin${pinned.length === 1 ? '' : 's'} of ${pinned.map((p) => p.target).join(', ')}.`
      : 'Once merged, the fleet follows Git again.',
  ].join('\n');
}

/** The pins the revert replaces: those holding the targets at the revision it restores. */
function pinsReplaced(range: RevertRange) {
  return range.targets.flatMap((t) =>
    t.pin && t.pin.revision === range.to
      ? [{ targetId: t.id, target: t.name, revision: t.pin.revision, bundleDigest: t.pin.bundleDigest }]
      : [],
  );
}

function failureOf(e: unknown): HubError | null {
  if (e instanceof PullRequestError)
    return new HubError(
      502,
      'pull-request-refused',
      `cannot open the pull request: ${e.message}; the branch was deleted`,
    );
  if (e instanceof RevertBranchError)
    return e.code === 'revert-conflict'
      ? new HubError(409, e.code, e.message)
      : new HubError(502, e.code, e.message);
  return null;
}

function viewOf(
  range: RevertRange,
  row: RevertRequest,
  restores: boolean | null,
  alreadyOpen: boolean,
): RevertView {
  return {
    appSet: range.appSet,
    target: range.target,
    repository: range.repository.url,
    to: row.toRevision,
    head: row.headRevision,
    commits: row.commits as RevertView['commits'],
    revert: row.revertCommit ?? '',
    branch: row.branch,
    pullRequest: { url: row.url ?? '', number: row.number ?? 0 },
    restores,
    pins: pinsReplaced(range).map(({ targetId: _, ...p }) => p),
    alreadyOpen,
  };
}
