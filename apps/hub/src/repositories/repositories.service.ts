import { Inject, Injectable, Logger } from '@nestjs/common';
import { z } from 'zod';
import { HUB_CONFIG, type HubConfig } from '../config/hub-config.js';
import { Database } from '../db/database.js';
import { HubError } from '../common/hub-error.js';
import { AuditLog } from '../audit/audit.service.js';
import { GitMirrorError } from '../git/git-mirror.js';
import { GitMirrorsService } from '../git/git-mirrors.service.js';
import { JobQueues } from '../queues/job-queues.service.js';
import { literalRepoRefs } from '../appsets/appset-document.js';
import type { Repository } from '../generated/prisma/client.js';

export const registerRepositorySchema = z.object({
  url: z
    .string()
    .min(1)
    .refine((u) => /^(https?|ssh|git|file):\/\//.test(u) || /^[\w.-]+@[\w.-]+:/.test(u), {
      message: 'must be a Git URL (https://, ssh://, git://, file:// or user@host:path)',
    }),
});

export interface SyncResult {
  ok: boolean;
  changed: boolean;
  error?: string;
}

/** Repositories the hub mirrors, their fetch status, and the commits their tracked refs point at. */
@Injectable()
export class RepositoriesService {
  private readonly logger = new Logger(RepositoriesService.name);

  constructor(
    private readonly db: Database,
    private readonly mirrors: GitMirrorsService,
    private readonly queues: JobQueues,
    private readonly audit: AuditLog,
    @Inject(HUB_CONFIG) private readonly config: HubConfig,
  ) {}

  /** Registers a URL (idempotent) and, when it is new, schedules its polling and a first fetch. */
  async register(url: string, actor: string): Promise<Repository> {
    const existing = await this.db.prisma.repository.findUnique({ where: { url } });
    if (existing) return existing;
    let repo: Repository;
    try {
      repo = await this.db.prisma.repository.create({ data: { url } });
    } catch {
      // Another request registered it at the same moment.
      return this.db.prisma.repository.findUniqueOrThrow({ where: { url } });
    }
    await this.audit.record({ actor, action: 'repository.registered', scope: `repository:${url}` });
    await this.queues.schedulePoll(repo.id, this.config.sources.pollIntervalSeconds);
    await this.queues.enqueue('source-sync', { repositoryId: repo.id, reason: 'manual' });
    return repo;
  }

  async list() {
    const repos = await this.db.prisma.repository.findMany({
      orderBy: { url: 'asc' },
      include: { refs: true },
    });
    return repos.map((r) => this.view(r));
  }

  async get(id: string) {
    const repo = await this.db.prisma.repository.findUnique({ where: { id }, include: { refs: true } });
    if (!repo) throw HubError.notFound('repository', id);
    return this.view(repo);
  }

  async refresh(id: string) {
    const repo = await this.db.prisma.repository.findUnique({ where: { id } });
    if (!repo) throw HubError.notFound('repository', id);
    // A manual refresh must run even if a poll of this repository is already queued.
    await this.queues.enqueue(
      'source-sync',
      { repositoryId: id, reason: 'manual' },
      { variant: `manual.${Date.now().toString(36)}${Math.random().toString(36).slice(2, 6)}` },
    );
    return { repositoryId: id, queued: true };
  }

  /**
   * Fetches the mirror and resolves every tracked ref. A failed fetch keeps the last good commits and
   * records the error on the repository. `changed` tells whether any tracked ref moved.
   */
  async syncNow(repositoryId: string): Promise<SyncResult> {
    const repo = await this.db.prisma.repository.findUnique({
      where: { id: repositoryId },
      include: { refs: true },
    });
    if (!repo) return { ok: false, changed: false, error: 'repository no longer exists' };
    try {
      await this.mirrors.mirrors.fetch(repo.id, repo.url);
    } catch (e) {
      const error = e instanceof GitMirrorError ? e.message : String(e);
      await this.db.prisma.repository.update({
        where: { id: repo.id },
        data: { status: 'Error', error, lastAttemptAt: new Date() },
      });
      if (repo.status !== 'Error' || repo.error !== error) {
        await this.audit.record({
          actor: 'hub',
          action: 'repository.fetch-failed',
          scope: `repository:${repo.url}`,
          details: { error },
        });
      }
      return { ok: false, changed: false, error };
    }
    const tracked = await this.trackedRefs(repo.url);
    const before = new Map(repo.refs.map((r) => [r.ref, r.sha]));
    const now = new Date();
    let changed = repo.lastFetchedAt === null;
    await this.db.prisma.$transaction(async (tx) => {
      for (const ref of tracked) {
        let sha: string;
        try {
          sha = this.mirrors.mirrors.resolve(repo.id, ref);
        } catch {
          continue; // an unknown ref is reported by the expansion that asked for it
        }
        // Polls mostly find nothing new: write only what moved.
        if (before.get(ref) === sha) continue;
        changed = true;
        await tx.repositoryRef.upsert({
          where: { repositoryId_ref: { repositoryId: repo.id, ref } },
          create: { repositoryId: repo.id, ref, sha, resolvedAt: now },
          update: { sha, resolvedAt: now },
        });
      }
      await tx.repository.update({
        where: { id: repo.id },
        data: { status: 'Ready', error: null, lastFetchedAt: now, lastAttemptAt: now },
      });
    });
    return { ok: true, changed };
  }

  /** Refs anyone reads from this repository: appset literals, targets' revisions, and HEAD. */
  async trackedRefs(url: string): Promise<string[]> {
    const refs = new Set<string>(['HEAD']);
    const appsets = await this.db.prisma.applicationSet.findMany({
      where: { repoUrls: { has: url } },
      select: { spec: true },
    });
    for (const a of appsets) for (const r of literalRepoRefs(a.spec).get(url) ?? []) refs.add(r);
    const targets = await this.db.prisma.target.findMany({
      where: { repoUrl: url },
      select: { targetRevision: true },
      distinct: ['targetRevision'],
    });
    for (const t of targets) refs.add(t.targetRevision || 'HEAD');
    return [...refs].sort();
  }

  private view(r: Repository & { refs: { ref: string; sha: string; resolvedAt: Date }[] }) {
    return {
      id: r.id,
      url: r.url,
      status: r.status,
      error: r.error,
      lastFetchedAt: r.lastFetchedAt?.toISOString() ?? null,
      lastAttemptAt: r.lastAttemptAt?.toISOString() ?? null,
      refs: Object.fromEntries(r.refs.map((x) => [x.ref, x.sha])),
      lastFetchedCommit: r.refs.find((x) => x.ref === 'HEAD')?.sha ?? null,
    };
  }
}
