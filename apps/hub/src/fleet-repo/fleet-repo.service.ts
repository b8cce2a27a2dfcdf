import {
  systemActor,
  type AuditActor,
  type FleetSourceDetailView,
  type FleetSourceErrorView,
  type FleetSourceView,
  type Page,
} from '@flotilla/contract';
import { createHash } from 'node:crypto';
import { Inject, Injectable, type OnApplicationBootstrap } from '@nestjs/common';
import { z } from 'zod';
import { AuditLog } from '../audit/audit.service.js';
import { HubError, parseInput } from '../common/hub-error.js';
import { HUB_CONFIG, type HubConfig } from '../config/hub-config.js';
import { Database } from '../db/database.js';
import type { FleetSource } from '../generated/prisma/client.js';
import { HEALTH_RULE_KIND } from '../health-rules/health-rules.service.js';
import { JobQueues } from '../queues/job-queues.service.js';
import { GitMirrorsService } from '../sources/git/git-mirrors.service.js';
import { RepositoriesService } from '../sources/repositories/repositories.service.js';
import type { PendingDeletion } from './deletion-hold.js';
import type { FleetConfirmation } from './fleet-apply.service.js';
import { FleetFollowUp } from './fleet-follow-up.service.js';
import { keyOf } from './fleet-plan.js';
import { FleetReconciler, type FleetOutcome } from './fleet-reconciler.service.js';
import { FleetRejections } from './fleet-rejections.service.js';
import { normaliseFleetPath, parseFleetRepositories, type FleetSourceSetting } from './fleet-setting.js';
import { keyPageArgs, keyPageOf, type PageKey, type PageQuery } from '../common/name-page.js';

export const sourceBody = z.strictObject({
  repoUrl: z.string().trim().min(1, 'the fleet repository URL is required'),
  revision: z.string().trim().min(1).default('HEAD'),
  path: z.string().default(''),
});
export const confirmBody = z.strictObject({
  commit: z.string().regex(/^[0-9a-f]{40}$/, 'the full sha of the held commit (pendingDeletion.commit)'),
  reason: z.string().trim().min(1, 'say why these objects may go; it is written to the audit log').max(1000),
});

/**
 * The hub's own objects reconciled from fleet repositories: the fleet sources (added through the API
 * or FLEET_REPOSITORIES, removed through the API), a reconcile job per source after each fetch, and
 * one reconcile at a time per source. What a reconcile does is FleetReconciler's: validate the whole
 * directory, plan, hold a commit that deletes too much, apply in one transaction.
 */
@Injectable()
export class FleetRepoService implements OnApplicationBootstrap {
  private readonly running = new Map<string, Promise<unknown>>();

  constructor(
    private readonly db: Database,
    private readonly repos: RepositoriesService,
    private readonly mirrors: GitMirrorsService,
    private readonly queues: JobQueues,
    private readonly audit: AuditLog,
    private readonly reconciler: FleetReconciler,
    private readonly rejections: FleetRejections,
    private readonly followUp: FleetFollowUp,
    @Inject(HUB_CONFIG) private readonly config: HubConfig,
  ) {}

  /** Sources named in FLEET_REPOSITORIES exist from the start (a hub on an empty database rebuilds). */
  async onApplicationBootstrap(): Promise<void> {
    for (const setting of parseFleetRepositories(this.config.fleet.repositories))
      await this.addSource(setting, systemActor('config'));
  }

  async add(body: unknown, actor: AuditActor) {
    const input = parseInput(sourceBody, body);
    const path = normaliseFleetPath(input.path, 'path');
    return this.addSource({ repoUrl: input.repoUrl, revision: input.revision, path }, actor);
  }

  private async addSource(
    setting: FleetSourceSetting,
    actor: AuditActor,
  ): Promise<{ created: boolean; source: FleetSourceView }> {
    const key = { repoUrl: setting.repoUrl, revision: setting.revision, path: setting.path };
    let row = await this.db.prisma.fleetSource.findUnique({ where: { repoUrl_revision_path: key } });
    const created = !row;
    if (!row) {
      row = await this.db.prisma.$transaction(async (tx) => {
        const r = await tx.fleetSource.create({ data: key });
        await this.audit.record(
          { actor, action: 'fleet-source.created', scope: `fleet-source:${r.id}`, details: key },
          tx,
        );
        return r;
      });
    }
    const repo = await this.repos.register(setting.repoUrl, actor, undefined, `fleet-source:${row.id}`);
    await this.queues.enqueue('source-sync', { repositoryId: repo.id, reason: 'manual' });
    return { created, source: view(row) };
  }

  async list(): Promise<FleetSourceView[]> {
    return (await this.db.prisma.fleetSource.findMany({ orderBy: { createdAt: 'asc' } })).map(view);
  }

  /** One page of fleet sources, by id: a source has no name, and ids never change (see common/name-page.ts). */
  async page(q: PageQuery): Promise<Page<FleetSourceView>> {
    const key: PageKey<{ id: string }> = { field: 'id', order: 'asc', of: (r) => r.id };
    const page = keyPageOf(await this.db.prisma.fleetSource.findMany(keyPageArgs(q, key)), q, key);
    return { items: page.rows.map(view), nextCursor: page.nextCursor };
  }

  async get(id: string): Promise<FleetSourceDetailView> {
    const row = await this.db.prisma.fleetSource.findUnique({ where: { id } });
    if (!row) throw HubError.notFound('fleet source', id);
    const managed = await this.db.prisma.fleetManaged.findMany({
      where: { fleetSourceId: id },
      orderBy: [{ kind: 'asc' }, { name: 'asc' }],
    });
    return {
      ...view(row),
      objects: managed.map((m) => ({
        kind: m.kind,
        name: m.name,
        file: m.file,
        commit: m.commit,
        // An emergency edit under a break-glass: the hub differs from Git until the next commit writes it.
        diverged: m.divergedAt
          ? { at: m.divergedAt.toISOString(), by: m.divergedBy, breakGlassId: m.divergedUnder }
          : null,
      })),
    };
  }

  /**
   * Stops following a source. Its objects stay and become API-managed (never deleted by a removal:
   * removing the setting is not saying "delete the fleet"). Its health rules and admission policies
   * go: the hub keeps no copy of them outside the source that declares them, and no API manages them.
   */
  async remove(id: string, actor: AuditActor): Promise<void> {
    const row = await this.db.prisma.fleetSource.findUnique({ where: { id } });
    if (!row) throw HubError.notFound('fleet source', id);
    const released = {
      managedBy: 'api',
      sourceRepo: null,
      sourceCommit: null,
      sourceAuthor: null,
      sourceFile: null,
    };
    const { hadRules, hadPolicies } = await this.db.prisma.$transaction(async (tx) => {
      const managed = await tx.fleetManaged.findMany({ where: { fleetSourceId: id } });
      // Like health rules, admission policies exist only in the source that declares them.
      const policies = await tx.admissionPolicyObject.deleteMany({ where: { fleetSourceId: id } });
      const names = (kind: string) => managed.filter((m) => m.kind === kind).map((m) => m.name);
      await tx.applicationSet.updateMany({
        where: { name: { in: names('ApplicationSet') } },
        data: released,
      });
      await tx.project.updateMany({ where: { name: { in: names('Project') } }, data: released });
      await tx.fleetManaged.deleteMany({ where: { fleetSourceId: id } });
      await tx.fleetSource.delete({ where: { id } });
      await this.audit.record(
        {
          actor,
          action: 'fleet-source.deleted',
          scope: `fleet-source:${id}`,
          details: {
            repoUrl: row.repoUrl,
            released: managed.map((m) => keyOf(m.kind, m.name)),
            admissionPoliciesRemoved: policies.count,
          },
        },
        tx,
      );
      return { hadRules: managed.some((m) => m.kind === HEALTH_RULE_KIND), hadPolicies: policies.count > 0 };
    });
    // Its health rules and admission policies go with it (the hub holds no other copy): every
    // cluster's assignments change, and every target is judged again.
    if (hadRules) await this.followUp.healthRulesChanged();
    if (hadPolicies) await this.followUp.policiesRemoved();
  }

  /** After a fetch of `url`: one reconcile job per source of that repository at its current commit. */
  async requestForRepository(url: string): Promise<void> {
    const sources = await this.db.prisma.fleetSource.findMany({ where: { repoUrl: url } });
    if (sources.length === 0) return;
    const repo = await this.db.prisma.repository.findUnique({ where: { url } });
    if (!repo || !this.mirrors.mirrors.hasMirror(repo.id)) return;
    // Cluster names are an input too: a ClusterGroup's labels reach clusters registered later.
    const clusters = await this.db.prisma.cluster.findMany({
      select: { name: true },
      orderBy: { name: 'asc' },
    });
    const inventoryHash = createHash('sha256')
      .update(clusters.map((c) => c.name).join('\n'))
      .digest('hex')
      .slice(0, 16);
    for (const s of sources) {
      let commit: string;
      try {
        commit = this.mirrors.mirrors.resolve(repo.id, s.revision);
      } catch (e) {
        await this.rejections.reject(s, null, {
          code: 'unknown-revision',
          message: (e as Error).message,
          path: 'revision',
        });
        continue;
      }
      await this.queues.enqueue('fleet-reconcile', { fleetSourceId: s.id, commit, inventoryHash });
    }
  }

  /** Applies the held commit after a person confirmed it (same commit, or 409). */
  async confirm(id: string, body: unknown, actor: AuditActor): Promise<FleetOutcome> {
    const input = parseInput(confirmBody, body);
    const row = await this.db.prisma.fleetSource.findUnique({ where: { id } });
    if (!row) throw HubError.notFound('fleet source', id);
    const pending = row.pendingDeletion as PendingDeletion | null;
    if (!pending)
      throw new HubError(409, 'nothing-held', `fleet source ${id} has no commit waiting for confirmation`);
    if (pending.commit !== input.commit)
      throw new HubError(
        409,
        'hold-changed',
        `the held commit is ${pending.commit}, not ${input.commit}; GET /api/v1/fleet-sources/${id} and confirm what it shows`,
        'commit',
      );
    return this.reconcile(id, input.commit, { commit: input.commit, reason: input.reason, actor });
  }

  /** Reconciles the source at `commit`, after any reconcile of it still running. */
  async reconcile(id: string, commit: string, confirmation?: FleetConfirmation): Promise<FleetOutcome> {
    const previous = this.running.get(id) ?? Promise.resolve();
    const work = previous
      .catch(() => undefined)
      .then(() => this.reconciler.reconcile(id, commit, confirmation));
    this.running.set(id, work);
    try {
      return await work;
    } finally {
      if (this.running.get(id) === work) this.running.delete(id);
    }
  }
}

/** A fleet source as the API shows it. */
function view(r: FleetSource): FleetSourceView {
  return {
    id: r.id,
    repoUrl: r.repoUrl,
    revision: r.revision,
    path: r.path,
    status: r.status,
    // Both JSON columns are written only with these shapes (FleetRejections, FleetReconciler).
    error: (r.error as FleetSourceErrorView | null) ?? null,
    pendingDeletion: (r.pendingDeletion as PendingDeletion | null) ?? null,
    appliedCommit: r.appliedCommit,
    appliedAuthor: r.appliedAuthor,
    appliedAt: r.appliedAt?.toISOString() ?? null,
    seenCommit: r.seenCommit,
    createdAt: r.createdAt.toISOString(),
  };
}
