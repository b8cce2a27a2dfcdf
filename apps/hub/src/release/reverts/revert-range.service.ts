import { Injectable } from '@nestjs/common';
import { commitsToRevert } from '@flotilla/plan';
import { simpleGit } from 'simple-git';
import { Database } from '../../db/database.js';
import { HubError } from '../../common/hub-error.js';
import { GitMirrorError, normalisePath } from '../../sources/git/git-mirror.js';
import { GitMirrorsService } from '../../sources/git/git-mirrors.service.js';
import { RepositoriesService } from '../../sources/repositories/repositories.service.js';
import { RenderService } from '../../render/render.service.js';
import { RenderError } from '../../render/render-error.js';
import type { RenderSource } from '../../render/render-source.js';
import type { Prisma } from '../../generated/prisma/client.js';

const revertTarget = {
  pin: true,
  appSet: { select: { name: true } },
} satisfies Prisma.TargetInclude;
export type RevertTarget = Prisma.TargetGetPayload<{ include: typeof revertTarget }>;

/** What a revert would do: the commits to revert between the revision to restore and Git's head. */
export interface RevertRange {
  appSet: string;
  /** The one target asked for; null for a whole appset. */
  target: string | null;
  targets: RevertTarget[];
  repository: { id: string; url: string };
  /** The branch the targets follow (their targetRevision), when it is one. */
  followedBranch: string | null;
  to: string;
  head: string;
  /** Oldest first. */
  commits: { commit: string; subject: string }[];
  /** What the targets render, joined: at `to`, and for any commit (rendered with the targets' own options). */
  wanted: string;
  fingerprintAt(commit: string): Promise<string>;
}

/**
 * Rollback by revert, the hub's half of `flotilla revert`: the commits of the targets' repository
 * since the revision to restore whose render (every target's bundle digest, rendered as the
 * expansion rendered it) differs from the commit before — the same rule, from libs/plan.
 */
@Injectable()
export class RevertRangeService {
  constructor(
    private readonly db: Database,
    private readonly mirrors: GitMirrorsService,
    private readonly repositories: RepositoriesService,
    private readonly render: RenderService,
  ) {}

  /** The range for one target, or every target of an appset; `to` defaults to their pin's revision. */
  async find(scope: { appSet?: string; target?: string }, to: string | undefined): Promise<RevertRange> {
    const targets = await this.targetsOf(scope);
    const first = targets[0];
    if (!first)
      throw new HubError(404, 'not-found', `appset "${scope.appSet ?? ''}" has no targets to revert`);
    if (targets.some((t) => t.sources !== null))
      throw new HubError(
        422,
        'revert-unsupported',
        `${describe(scope)} has a multi-source target: revert it by hand (flotilla revert)`,
      );
    const urls = new Set(targets.map((t) => t.repoUrl));
    if (urls.size > 1)
      throw new HubError(
        422,
        'revert-unsupported',
        `the targets of ${describe(scope)} come from ${urls.size} repositories: revert one target at a time`,
        'appSet',
      );
    const heads = new Set(targets.map((t) => t.desiredRevision));
    if (heads.size > 1)
      throw new HubError(
        422,
        'revert-unsupported',
        `the targets of ${describe(scope)} are at ${heads.size} different revisions: revert one target at a time`,
        'appSet',
      );
    const repo = await this.db.prisma.repository.findUnique({ where: { url: first.repoUrl } });
    if (!repo || !this.mirrors.mirrors.hasMirror(repo.id))
      throw new HubError(
        409,
        'repository-not-fetched',
        `repository ${first.repoUrl} has no mirror yet`,
        'repository',
      );
    const head = first.desiredRevision;
    const toRevision = this.resolve(repo.id, first.repoUrl, to ?? pinnedRevision(targets, scope));
    if (this.mirrors.mirrors.missingCommits(repo.id, [head, toRevision]).length > 0)
      await this.repositories.fetchMirror(repo.id);
    const git = simpleGit({ baseDir: this.mirrors.mirrors.dirOf(repo.id) });
    try {
      await git.raw(['merge-base', '--is-ancestor', toRevision, head]);
    } catch {
      throw new HubError(
        400,
        'invalid-request',
        `to: ${toRevision.slice(0, 12)} is not an ancestor of ${head.slice(0, 12)}, the revision Git wants`,
        'to',
      );
    }
    const range = (await git.raw(['rev-list', '--reverse', '--no-merges', `${toRevision}..${head}`]))
      .split('\n')
      .filter(Boolean);
    const fingerprintAt = this.fingerprinter(repo, targets);
    const wanted = await fingerprintAt(toRevision);
    const changed = await commitsToRevert({
      commits: range,
      wanted,
      atHead: await fingerprintAt(head),
      fingerprintAt,
    });
    const commits = [];
    for (const commit of changed)
      commits.push({ commit, subject: (await git.raw(['log', '-1', '--format=%s', commit])).trim() });
    return {
      appSet: first.appSet.name,
      target: scope.target ?? null,
      targets,
      repository: { id: repo.id, url: repo.url },
      followedBranch: this.followedBranch(repo.id, first.targetRevision),
      to: toRevision,
      head,
      commits,
      wanted,
      fingerprintAt,
    };
  }

  private async targetsOf(scope: { appSet?: string; target?: string }): Promise<RevertTarget[]> {
    if (scope.target !== undefined) {
      const t = await this.db.prisma.target.findUnique({
        where: { name: scope.target },
        include: revertTarget,
      });
      if (!t) throw HubError.notFound('target', scope.target);
      return [t];
    }
    const appSet = await this.db.prisma.applicationSet.findUnique({ where: { name: scope.appSet ?? '' } });
    if (!appSet) throw HubError.notFound('appset', scope.appSet ?? '');
    return this.db.prisma.target.findMany({
      where: { appSetId: appSet.id, deletionId: null, bundleDigest: { not: null } },
      include: revertTarget,
      orderBy: { name: 'asc' },
    });
  }

  private resolve(repositoryId: string, url: string, revision: string): string {
    try {
      return this.mirrors.mirrors.resolve(repositoryId, revision);
    } catch (e) {
      if (e instanceof GitMirrorError)
        throw new HubError(422, 'unknown-revision', `to: ${url}: ${e.message}`, 'to');
      throw e;
    }
  }

  private followedBranch(repositoryId: string, targetRevision: string): string | null {
    if (targetRevision === '' || targetRevision === 'HEAD' || /^[0-9a-f]{40}$/.test(targetRevision))
      return null;
    try {
      this.mirrors.mirrors.resolve(repositoryId, `refs/heads/${targetRevision}`);
      return targetRevision;
    } catch {
      return null;
    }
  }

  /**
   * What the targets render at a commit, as one string: each target's digest, rendered with the
   * options its current bundle was rendered with (a chart's values, kustomize overrides), each
   * distinct input once.
   */
  private fingerprinter(repo: { id: string; url: string }, targets: RevertTarget[]) {
    const inputs = new Map<string, Omit<RenderSource, 'revision'>>();
    return async (commit: string): Promise<string> => {
      const digests: string[] = [];
      for (const t of targets) {
        let input = inputs.get(t.id);
        if (!input) {
          input = await this.renderInputOf(repo, t);
          inputs.set(t.id, input);
        }
        try {
          digests.push(`${t.name}=${await this.render.render({ ...input, revision: commit })}`);
        } catch (e) {
          // A commit that does not render is a change like any other (and the revert takes it back).
          if (!(e instanceof RenderError)) throw e;
          digests.push(`${t.name}=error:${e.code}`);
        }
      }
      return digests.sort().join('\n');
    };
  }

  /** The path and options the target's bundle was rendered with (its render record), else its path alone. */
  private async renderInputOf(
    repo: { id: string; url: string },
    t: RevertTarget,
  ): Promise<Omit<RenderSource, 'revision'>> {
    const record = await this.db.prisma.renderRecord.findFirst({
      where: {
        repositoryId: repo.id,
        path: normalisePath(t.sourcePath) || '.',
        digest: { in: [t.bundleDigest ?? '', t.pin?.bundleDigest ?? ''] },
      },
      orderBy: { renderedAt: 'desc' },
    });
    const base = { repositoryId: repo.id, repoUrl: repo.url };
    if (!record) return { ...base, path: t.sourcePath };
    const options = (record.options ?? {}) as Record<string, unknown>;
    if (record.renderer === 'helm')
      return {
        ...base,
        path: record.path,
        helm: options.helm,
        ...(options.application !== undefined && {
          application: options.application as RenderSource['application'],
        }),
        ...(options.capabilities !== undefined && {
          capabilities: options.capabilities as RenderSource['capabilities'],
        }),
      };
    return { ...base, path: record.path, ...(Object.keys(options).length > 0 && { kustomize: options }) };
  }
}

function describe(scope: { appSet?: string; target?: string }): string {
  return scope.target !== undefined ? `target ${scope.target}` : `appset ${scope.appSet ?? ''}`;
}

/** The revision the targets are pinned to: the one to restore when the request names none. */
function pinnedRevision(targets: RevertTarget[], scope: { appSet?: string; target?: string }): string {
  const pinned = new Set(targets.flatMap((t) => (t.pin ? [t.pin.revision] : [])));
  const [only] = pinned;
  if (pinned.size === 1 && only !== undefined) return only;
  throw new HubError(
    400,
    'invalid-request',
    pinned.size === 0
      ? `to: ${describe(scope)} is not pinned; say which revision to restore`
      : `to: the targets of ${describe(scope)} are pinned to ${pinned.size} revisions; say which one to restore`,
    'to',
  );
}
