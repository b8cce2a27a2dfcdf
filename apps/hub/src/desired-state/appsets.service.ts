import type { AuditActor, AppSetRefreshView, AppSetView, PendingExpansionView } from '@flotilla/contract';
import { pageArgs, pageOf, type PageQuery } from '../common/name-page.js';
import { Injectable } from '@nestjs/common';
import { z } from 'zod';
import { Database } from '../db/database.js';
import { removeAppSet } from './target-deletions.service.js';
import { HubError, parseInput } from '../common/hub-error.js';
import { toJson } from '../common/json.js';
import { AuditLog } from '../audit/audit.service.js';
import { ClusterWakeups } from '../wakeups/cluster-wakeups.service.js';
import { ExpansionRequests } from '../wakeups/expansion-requests.service.js';
import { RepositoriesService } from '../sources/repositories/repositories.service.js';
import { readAppSetDocument } from './appset-document.js';
import { literalRepoRefs, literalRepoUrlPaths } from '@flotilla/generators';
import { AppSetExpander, type ExpansionPreview } from './appset-expander.service.js';
import type { ExpansionOutcome } from './expansion-transaction.service.js';
import { checkAppSetDocument } from './appset-checks.js';
import { projectNameOf } from '@flotilla/fleet-config';
import { sourceView } from '../ownership/git-managed.js';
import { FleetOwnership } from '../ownership/fleet-ownership.service.js';
import { ProjectGate, ProjectPolicy } from '../projects/project-policy.service.js';
import type { ApplicationSet } from '../generated/prisma/client.js';

/** ApplicationSets as people submit them, and the triggers that (re-)expand them. */
export const refreshRequestSchema = z.strictObject({
  /** Fetch the appset's Git repositories first (Argo CD's hard refresh). */
  hard: z.boolean().default(false),
  /** Why, for the audit log (optional: a refresh changes no desired state). */
  reason: z.string().trim().max(1000).optional(),
});

/**
 * Deleting an appset deletes its targets with it: 20,000 of them (1,000 clusters × 20 apps) took
 * longer than Prisma's default 5 s, which answered 500 and deleted nothing.
 */
const DELETE_TX = { timeout: 60_000, maxWait: 15_000 };

@Injectable()
export class AppSetsService {
  constructor(
    private readonly db: Database,
    private readonly repos: RepositoriesService,
    private readonly expansions: ExpansionRequests,
    private readonly audit: AuditLog,
    private readonly wakeups: ClusterWakeups,
    private readonly expander: AppSetExpander,
    private readonly projects: ProjectPolicy,
    private readonly ownership: FleetOwnership,
  ) {}

  /** Create or replace by name. Validated before anything is stored; expansion runs in the pipeline. */
  async apply(
    body: unknown,
    actor: AuditActor,
  ): Promise<{ created: boolean; appSet: ReturnType<AppSetsService['view']> }> {
    const doc = readAppSetDocument(body);
    checkAppSetDocument(doc.document);
    const repoUrls = [...literalRepoRefs(doc.document).keys()].sort();
    // The same check as POST /repositories, before anything is stored or fetched.
    for (const [url, path] of literalRepoUrlPaths(doc.document)) this.repos.checkUrl(url, path);
    const project = projectNameOf(doc.document);
    if ('error' in project) throw new HubError(400, 'invalid-appset', project.error, project.path);
    // Refused before anything is stored or fetched: an unknown project, or a repository outside it.
    const gate = await this.projects.gateFor(doc.document);
    if (!(gate instanceof ProjectGate)) throw new HubError(422, gate.code, gate.message, gate.path);
    const refused = gate.checkLiteralRepositories(doc.document);
    if (refused) throw new HubError(403, refused.code, refused.message, refused.path);
    const existing = await this.db.prisma.applicationSet.findUnique({ where: { name: doc.name } });
    if (existing) await this.ownership.checkEdit('ApplicationSet', doc.name, actor);
    if (existing?.status === 'Deleting')
      throw new HubError(
        409,
        'appset-deleting',
        `appset "${doc.name}" is being deleted: its agents are deleting its targets' objects; apply it again once it is gone`,
        'metadata.name',
      );
    const row = await this.db.prisma.$transaction(async (tx) => {
      const r = existing
        ? await tx.applicationSet.update({
            where: { id: existing.id },
            data: {
              apiVersion: doc.apiVersion,
              spec: toJson(doc.document),
              repoUrls,
              project: project.name,
              status: 'Pending',
            },
          })
        : await tx.applicationSet.create({
            data: {
              name: doc.name,
              apiVersion: doc.apiVersion,
              spec: toJson(doc.document),
              repoUrls,
              project: project.name,
            },
          });
      await this.audit.record(
        {
          actor,
          action: existing ? 'appset.updated' : 'appset.created',
          scope: `appset:${doc.name}`,
          details: { repoUrls },
        },
        tx,
      );
      return r;
    });
    for (const url of repoUrls) await this.repos.register(url, actor, undefined, `appset:${doc.name}`);
    await this.expansions.requestExpand(row.id);
    // The spec's rollout strategy and project travel in every assignment of the appset, whether or
    // not the expansion changes a target: wake the clusters it runs on.
    if (existing) await this.wakeups.notify(await this.clustersOf([row.id]));
    return { created: !existing, appSet: this.view(row, 0) };
  }

  async list(): Promise<AppSetView[]> {
    const rows = await this.db.prisma.applicationSet.findMany({
      orderBy: { name: 'asc' },
      include: { _count: { select: { targets: true } } },
    });
    return rows.map((r) => this.view(r, r._count.targets));
  }

  /** One page of appsets by name (see common/name-page.ts). */
  async page(q: PageQuery): Promise<{ items: AppSetView[]; nextCursor: string | null }> {
    const { where, take } = pageArgs(q);
    const page = pageOf(
      await this.db.prisma.applicationSet.findMany({
        where,
        take,
        orderBy: { name: 'asc' },
        include: { _count: { select: { targets: true } } },
      }),
      q,
    );
    return { items: page.rows.map((r) => this.view(r, r._count.targets)), nextCursor: page.nextCursor };
  }

  async get(name: string): Promise<AppSetView> {
    const row = await this.db.prisma.applicationSet.findUnique({
      where: { name },
      include: { _count: { select: { targets: true } } },
    });
    if (!row) throw HubError.notFound('appset', name);
    return { ...this.view(row, row._count.targets), fleetErrors: await this.fleetErrorsOf(row) };
  }

  /**
   * For an appset from a fleet repository: the errors of the source's last refused commit that name
   * it. The appset keeps running what was last applied; this says why its newer version is not.
   */
  private async fleetErrorsOf(row: ApplicationSet): Promise<unknown[]> {
    if (row.managedBy !== 'git') return [];
    const managed = await this.db.prisma.fleetManaged.findUnique({
      where: { kind_name: { kind: 'ApplicationSet', name: row.name } },
      select: { fleetSourceId: true },
    });
    if (!managed) return [];
    const source = await this.db.prisma.fleetSource.findUnique({ where: { id: managed.fleetSourceId } });
    if (source?.status !== 'Error') return [];
    const errors = (source.error as { errors?: { kind?: string; name?: string }[] } | null)?.errors ?? [];
    return errors
      .filter((e) => e.kind === 'ApplicationSet' && e.name === row.name)
      .map((e) => ({ ...e, commit: source.seenCommit }));
  }

  /**
   * Evaluates the appset again now — its generators against today's inventory and resolved refs —
   * and, with `hard`, first fetches every Git repository it reads, as a push webhook would (a
   * fetch that moves a ref expands again once it lands). Both are queued and deduplicated like any
   * other work: the answer says what was asked, each repository's status when its fetch ended.
   * Changes no desired state by itself, so operators may ask it, fleet-managed appsets too.
   */
  async refresh(name: string, body: unknown, actor: AuditActor): Promise<AppSetRefreshView> {
    const { hard, reason } = parseInput(refreshRequestSchema, body ?? {});
    const row = await this.db.prisma.applicationSet.findUnique({
      where: { name },
      select: { id: true, repoUrls: true },
    });
    if (!row) throw HubError.notFound('appset', name);
    const requestedAt = new Date();
    const repositories = hard
      ? await this.db.prisma.repository.findMany({
          where: { url: { in: row.repoUrls } },
          orderBy: { url: 'asc' },
          select: { id: true, url: true },
        })
      : [];
    for (const r of repositories) await this.repos.refresh(r.id);
    await this.expansions.requestExpand(row.id);
    await this.audit.record({
      actor,
      action: 'appset.refreshed',
      scope: `appset:${name}`,
      details: { hard, repositories: repositories.map((r) => r.url), ...(reason && { reason }) },
    });
    return { appSet: name, hard, requestedAt: requestedAt.toISOString(), repositories };
  }

  async remove(name: string, actor: AuditActor): Promise<void> {
    const row = await this.db.prisma.applicationSet.findUnique({
      where: { name },
      include: { targets: { select: { clusterId: true } } },
    });
    if (!row) throw HubError.notFound('appset', name);
    await this.ownership.checkEdit('ApplicationSet', name, actor);
    const removed = await this.db.prisma.$transaction(async (tx) => {
      const r = await removeAppSet(tx, row);
      await this.audit.recordMany(
        [
          {
            actor,
            action: 'appset.deleted',
            scope: `appset:${name}`,
            details: {
              targetsRemoved: row.targets.length,
              ...(r.deferred && { deletingWithObjects: r.audit.length }),
            },
          },
          ...r.audit,
        ],
        tx,
      );
      return r;
    }, DELETE_TX);
    await this.wakeups.notify(removed.clusterIds);
  }

  /** The dry run of a submitted document against the appset of its name (if stored); stores nothing. */
  async previewDocument(body: unknown): Promise<ExpansionPreview> {
    const doc = readAppSetDocument(body);
    checkAppSetDocument(doc.document);
    for (const [url, path] of literalRepoUrlPaths(doc.document)) this.repos.checkUrl(url, path);
    return this.expander.preview(doc.name, doc.document);
  }

  /** The dry run of a stored appset with today's inventory and mirrors. */
  async preview(name: string): Promise<ExpansionPreview> {
    const row = await this.db.prisma.applicationSet.findUnique({ where: { name } });
    if (!row) throw HubError.notFound('appset', name);
    return this.expander.preview(name, row.spec);
  }

  /** Applies the expansion the deletion guard holds; the reason goes to the audit log. */
  async confirmExpansion(name: string, body: unknown, actor: AuditActor): Promise<ExpansionOutcome> {
    const input = parseInput(confirmExpansionBody, body);
    return this.expander.confirm(name, { inputsHash: input.inputsHash, reason: input.reason, actor });
  }

  /** The clusters the appsets have targets on. */
  async clustersOf(appSetIds: string[]): Promise<string[]> {
    const targets = await this.db.prisma.target.findMany({
      where: { appSetId: { in: appSetIds } },
      select: { clusterId: true },
      distinct: ['clusterId'],
    });
    return targets.map((t) => t.clusterId);
  }

  private view(r: ApplicationSet, targetCount: number): AppSetView {
    return {
      id: r.id,
      name: r.name,
      apiVersion: r.apiVersion,
      status: r.status,
      error: r.error ?? null,
      pendingExpansion: (r.pendingExpansion as PendingExpansionView | null) ?? null,
      repoUrls: r.repoUrls,
      project: r.project,
      source: sourceView(r),
      targetCount,
      lastExpandedAt: r.lastExpandedAt?.toISOString() ?? null,
      createdAt: r.createdAt.toISOString(),
      updatedAt: r.updatedAt.toISOString(),
      document: r.spec,
    };
  }
}

export const confirmExpansionBody = z.object({
  inputsHash: z.string().min(1, 'name the held expansion (pendingExpansion.inputsHash of the appset)'),
  reason: z.string().trim().min(1, 'say why these targets may go; it is written to the audit log').max(1000),
});
