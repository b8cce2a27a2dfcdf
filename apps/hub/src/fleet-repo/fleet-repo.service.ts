import { createHash } from 'node:crypto';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { Inject, Injectable, Logger, type OnApplicationBootstrap } from '@nestjs/common';
import {
  compareFleetErrors,
  isFleetFile,
  isHealthRuleFile,
  projectNameOf,
  validateFleetDirectory,
  validateFleetHealthRules,
  type FleetError,
  type FleetFile,
  type FleetObject,
} from '@flotilla/fleet-config';
import { relabelCluster, withRawAppSets } from '@flotilla/plan';
import { z } from 'zod';
import { Database } from '../db/database.js';
import { HubError, parseInput } from '../common/hub-error.js';
import { checkPolicyDestinations } from '../notifications/notifications.service.js';
import { asRecord, toJson } from '../common/json.js';
import { HUB_CONFIG, type HubConfig } from '../config/hub-config.js';
import { AuditLog, type AuditEntry } from '../audit/audit.service.js';
import { GitMirrorsService } from '../sources/git/git-mirrors.service.js';
import { JobQueues } from '../queues/job-queues.service.js';
import { ClusterWakeups } from '../wakeups/cluster-wakeups.service.js';
import { RepositoriesService } from '../sources/repositories/repositories.service.js';
import { AppSetsService } from '../desired-state/appsets.service.js';
import { readAppSetDocument } from '../desired-state/appset-document.js';
import { literalRepoRefs } from '@flotilla/generators';
import { evaluateDeletionGuard, nextGuardBaseline } from '../desired-state/deletion-guard.js';
import { checkAppSetDocument } from '../desired-state/appset-checks.js';
import { ProjectsService } from '../projects/projects.service.js';
import { WindowsService } from '../release/windows/windows.service.js';
import { Prisma, type FleetSource } from '../generated/prisma/client.js';
import {
  APPLY_ORDER,
  keyOf,
  planFleet,
  type FleetPlan,
  type HealthRuleObject,
  type ManagedEntry,
  type PlannedObject,
} from './fleet-plan.js';
import { HEALTH_RULE_KIND } from '../health-rules/health-rules.service.js';
import { removeAppSet } from '../desired-state/target-deletions.service.js';
import { normaliseFleetPath, parseFleetRepositories, type FleetSourceSetting } from './fleet-setting.js';
import { ExpansionRequests } from '../wakeups/expansion-requests.service.js';
import { keyPageArgs, keyPageOf, type PageKey, type PageQuery } from '../common/name-page.js';

const run = promisify(execFile);

/** What one reconcile of a fleet source did. */
export interface FleetOutcome {
  status: 'Ready' | 'Error' | 'Held' | 'Gone';
  commit?: string;
  created: string[];
  updated: string[];
  deleted: string[];
  error?: unknown;
}

/** A person's go-ahead for a commit the deletion guard holds. */
export interface FleetConfirmation {
  commit: string;
  reason: string;
  actor: string;
}

interface PendingDeletion {
  commit: string;
  delete: string[];
  /** Objects the source manages, and the share of them the commit deletes. */
  currentCount: number;
  deletePercent: number;
  limit: number;
  /** The targets of the appsets it deletes, judged against the source's baseline. */
  targets: { current: number; deleting: number; baseline: number; deletePercent: number };
  heldAt: string;
}

const sourceBody = z.strictObject({
  repoUrl: z.string().trim().min(1, 'the fleet repository URL is required'),
  revision: z.string().trim().min(1).default('HEAD'),
  path: z.string().default(''),
});
const confirmBody = z.strictObject({
  commit: z.string().regex(/^[0-9a-f]{40}$/, 'the full sha of the held commit (pendingDeletion.commit)'),
  reason: z.string().trim().min(1, 'say why these objects may go; it is written to the audit log').max(1000),
});

/**
 * The hub's own objects reconciled from fleet repositories. At each new commit of a source the whole
 * directory is validated (any invalid object → nothing changes, the errors name file, document and
 * field); then Projects, ApplicationSets and cluster labels (ClusterGroup) are created, updated and
 * deleted in one transaction, and SyncWindows through the windows service, each recording its commit,
 * author and file. A commit that would delete too many objects waits for confirmation.
 */
@Injectable()
export class FleetRepoService implements OnApplicationBootstrap {
  private readonly logger = new Logger(FleetRepoService.name);
  private readonly running = new Map<string, Promise<unknown>>();

  constructor(
    private readonly db: Database,
    private readonly repos: RepositoriesService,
    private readonly mirrors: GitMirrorsService,
    private readonly queues: JobQueues,
    private readonly wakeups: ClusterWakeups,
    private readonly audit: AuditLog,
    private readonly appsets: AppSetsService,
    private readonly expansions: ExpansionRequests,
    private readonly projects: ProjectsService,
    private readonly windows: WindowsService,
    @Inject(HUB_CONFIG) private readonly config: HubConfig,
  ) {}

  /** Sources named in FLEET_REPOSITORIES exist from the start (a hub on an empty database rebuilds). */
  async onApplicationBootstrap(): Promise<void> {
    for (const setting of parseFleetRepositories(this.config.fleet.repositories))
      await this.addSource(setting, 'hub:config');
  }

  async add(body: unknown, actor: string) {
    const input = parseInput(sourceBody, body);
    const path = normaliseFleetPath(input.path, 'path');
    return this.addSource({ repoUrl: input.repoUrl, revision: input.revision, path }, actor);
  }

  private async addSource(setting: FleetSourceSetting, actor: string) {
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
    const repo = await this.repos.register(setting.repoUrl, `fleet-source:${row.id}`);
    await this.queues.enqueue('source-sync', { repositoryId: repo.id, reason: 'manual' });
    return { created, source: view(row) };
  }

  async list() {
    return (await this.db.prisma.fleetSource.findMany({ orderBy: { createdAt: 'asc' } })).map(view);
  }

  /** One page of fleet sources, by id: a source has no name, and ids never change (see common/name-page.ts). */
  async page(q: PageQuery) {
    const key: PageKey<{ id: string }> = { field: 'id', order: 'asc', of: (r) => r.id };
    const page = keyPageOf(await this.db.prisma.fleetSource.findMany(keyPageArgs(q, key)), q, key);
    return { items: page.rows.map(view), nextCursor: page.nextCursor };
  }

  async get(id: string) {
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
   * removing the setting is not saying "delete the fleet"). Its health rules go: the hub keeps no
   * copy of a rule outside the source that declares it, and there is no API to manage one.
   */
  async remove(id: string, actor: string): Promise<void> {
    const row = await this.db.prisma.fleetSource.findUnique({ where: { id } });
    if (!row) throw HubError.notFound('fleet source', id);
    const released = {
      managedBy: 'api',
      sourceRepo: null,
      sourceCommit: null,
      sourceAuthor: null,
      sourceFile: null,
    };
    const hadRules = await this.db.prisma.$transaction(async (tx) => {
      const managed = await tx.fleetManaged.findMany({ where: { fleetSourceId: id } });
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
          details: { repoUrl: row.repoUrl, released: managed.map((m) => keyOf(m.kind, m.name)) },
        },
        tx,
      );
      return managed.some((m) => m.kind === HEALTH_RULE_KIND);
    });
    // Its health rules go with it (the hub holds no other copy): every cluster's assignments change.
    if (hadRules) await this.wakeups.notify(await this.everyClusterId());
  }

  /** Health rules are fleet-wide: when they change, every cluster's assignments (and ETag) do. */
  private async everyClusterId(): Promise<string[]> {
    return (await this.db.prisma.cluster.findMany({ select: { id: true } })).map((c) => c.id);
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
        await this.fail(s, null, {
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
  async confirm(id: string, body: unknown, actor: string): Promise<FleetOutcome> {
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

  async reconcile(id: string, commit: string, confirmation?: FleetConfirmation): Promise<FleetOutcome> {
    const previous = this.running.get(id) ?? Promise.resolve();
    const work = previous.catch(() => undefined).then(() => this.reconcileNow(id, commit, confirmation));
    this.running.set(id, work);
    try {
      return await work;
    } finally {
      if (this.running.get(id) === work) this.running.delete(id);
    }
  }

  private async reconcileNow(
    id: string,
    commit: string,
    confirmation?: FleetConfirmation,
  ): Promise<FleetOutcome> {
    const none = { created: [], updated: [], deleted: [] };
    const source = await this.db.prisma.fleetSource.findUnique({ where: { id } });
    if (!source) return { status: 'Gone', ...none };
    const repo = await this.db.prisma.repository.findUnique({ where: { url: source.repoUrl } });
    if (!repo || !this.mirrors.mirrors.hasMirror(repo.id)) {
      const error = { code: 'repository-not-fetched', message: `${source.repoUrl} has not been fetched yet` };
      await this.fail(source, commit, error);
      return { status: 'Error', commit, ...none, error };
    }

    // 1. Validate the whole directory, health rules included; any error refuses the whole commit.
    const files: FleetFile[] = this.mirrors.mirrors
      .listFiles(repo.id, commit, source.path)
      .filter((path) => isFleetFile(path) || isHealthRuleFile(path))
      .map((path) => ({ path, content: this.mirrors.mirrors.readFile(repo.id, commit, path) }));
    const validation = validateFleetDirectory(files);
    const rules = await validateFleetHealthRules(files);
    const fleetObjects = withRawAppSets(validation.objects, files);
    // The hub's own appset checks, the same the API makes (deletion guard, rollout, ignore rules).
    const errors = [...validation.errors, ...rules.errors, ...hubChecks(fleetObjects)].sort(
      compareFleetErrors,
    );
    if (errors.length > 0) {
      const error = {
        code: 'invalid-commit',
        message: `commit ${commit.slice(0, 12)} has ${errors.length} invalid object(s); nothing changed`,
        errors: errors.slice(0, 100),
      };
      await this.fail(source, commit, error);
      return { status: 'Error', commit, ...none, error };
    }

    // 2. Plan against what the fleet sources manage; never take another source's object.
    const author = await this.authorOf(repo.id, commit);
    const managed: ManagedEntry[] = await this.db.prisma.fleetManaged.findMany();
    const objects: PlannedObject[] = [
      ...fleetObjects,
      ...rules.rules.map((r): HealthRuleObject => ({
        kind: HEALTH_RULE_KIND,
        name: r.key,
        file: r.file,
        document: 0,
        line: 1,
        object: { script: r.script },
      })),
    ];
    const plan = planFleet(id, objects, managed);
    if (plan.conflicts.length > 0) {
      const c = plan.conflicts[0];
      const error = {
        code: 'managed-elsewhere',
        message: `${keyOf(c?.object.kind ?? '', c?.object.name ?? '')} (${c?.object.file ?? ''}) is already managed by fleet source ${c?.owner.fleetSourceId ?? ''} (${c?.owner.file ?? ''}); nothing changed`,
        path: c?.object.file,
      };
      await this.fail(source, commit, error);
      return { status: 'Error', commit, ...none, error };
    }
    if (
      plan.create.length + plan.update.length + plan.delete.length === 0 &&
      source.appliedCommit === commit &&
      source.status === 'Ready'
    )
      return { status: 'Ready', commit, ...none };

    // 3. The deletion guard: a truncated commit (or a wrong path) must not delete the fleet. Judged
    // on objects and on the targets of the appsets it deletes (1 of 2 appsets may be most of the
    // fleet), the targets against a baseline that only a confirmation lowers.
    const limit = this.config.appsets.deletionGuardPercent;
    const mine = managed.filter((m) => m.fleetSourceId === id).length;
    const objectVerdict = evaluateDeletionGuard(
      {
        current: mine,
        deleting: plan.delete.length,
        after: mine - plan.delete.length + plan.create.length,
        baseline: null,
      },
      limit,
    );
    const targets = await this.targetsAtStake(id, managed, plan);
    const targetVerdict = evaluateDeletionGuard(
      { ...targets, after: targets.current - targets.deleting, baseline: source.guardBaseline },
      limit,
    );
    const confirmed = confirmation?.commit === commit;
    if ((objectVerdict.wouldHold || targetVerdict.wouldHold) && !confirmed) {
      const pending: PendingDeletion = {
        commit,
        delete: plan.delete.map((m) => keyOf(m.kind, m.name)).sort(),
        currentCount: mine,
        deletePercent: objectVerdict.deletePercent,
        limit,
        targets: {
          current: targets.current,
          deleting: targets.deleting,
          baseline: targetVerdict.baseline,
          deletePercent: targetVerdict.deletePercent,
        },
        heldAt: new Date().toISOString(),
      };
      const error = {
        code: 'deletion-held',
        message:
          `commit ${commit.slice(0, 12)} would delete ${pending.delete.length} of ${mine} objects (${objectVerdict.deletePercent} %) ` +
          `and ${targets.deleting} of ${targets.current} targets (${targetVerdict.deletePercent} % of the baseline of ${targetVerdict.baseline}), limit ${limit} %: ` +
          `${pending.delete.slice(0, 20).join(', ')}. Nothing changed. If intended, POST /api/v1/fleet-sources/${id}/confirm {"commit": "${commit}", "reason": "..."}`,
      };
      const already = (source.pendingDeletion as PendingDeletion | null)?.commit === commit;
      await this.db.prisma.fleetSource.update({
        where: { id },
        data: { status: 'Held', error: toJson(error), pendingDeletion: toJson(pending), seenCommit: commit },
      });
      if (!already)
        await this.audit.record({
          actor: 'hub',
          action: 'fleet.deletion-held',
          scope: `fleet-source:${id}`,
          details: { ...pending, author },
        });
      return { status: 'Held', commit, ...none, error };
    }

    // 4. Apply: hub objects in one transaction, then windows through their service.
    let applied;
    try {
      const guardBaseline = nextGuardBaseline(targetVerdict, targets.current - targets.deleting, confirmed);
      applied = await this.apply(source, commit, author, plan, managed, guardBaseline, confirmation);
      await this.applyWindows(plan, commit, author);
    } catch (e) {
      // A refusal of the hub's own checks (an appset the API would refuse too): recorded, not retried.
      if (!(e instanceof HubError)) throw e;
      const error = { ...e.toApiError(), message: `commit ${commit.slice(0, 12)}: ${e.message}` };
      await this.fail(source, commit, error);
      return { status: 'Error', commit, ...none, error };
    }
    await this.afterApply(applied);
    return {
      status: 'Ready',
      commit,
      created: plan.create.map((o) => keyOf(o.kind, o.name)),
      updated: plan.update.map((o) => keyOf(o.kind, o.name)),
      deleted: plan.delete.map((m) => keyOf(m.kind, m.name)),
    };
  }

  private async apply(
    source: FleetSource,
    commit: string,
    author: string,
    plan: FleetPlan,
    managed: readonly ManagedEntry[],
    guardBaseline: number,
    confirmation?: FleetConfirmation,
  ): Promise<{
    appSetIds: string[];
    projects: string[];
    labelsChanged: boolean;
    clusterIds: string[];
    healthRulesChanged: boolean;
  }> {
    const actor = `git:${author}`;
    const gitSource = (o: PlannedObject) => ({
      managedBy: 'git',
      sourceRepo: source.repoUrl,
      sourceCommit: commit,
      sourceAuthor: author,
      sourceFile: o.file,
    });
    const order = (o: { kind: string }) => APPLY_ORDER.indexOf(o.kind as (typeof APPLY_ORDER)[number]);
    const upserts = [...plan.create, ...plan.update].sort((a, b) => order(a) - order(b));
    const created = new Set(plan.create.map((o) => keyOf(o.kind, o.name)));
    const result = {
      appSetIds: [] as string[],
      projects: [] as string[],
      labelsChanged: false,
      clusterIds: [] as string[],
      healthRulesChanged: [...plan.create, ...plan.update, ...plan.delete].some(
        (o) => o.kind === HEALTH_RULE_KIND,
      ),
    };

    await this.db.prisma.$transaction(
      async (tx) => {
        const events: AuditEntry[] = [];
        const event = (
          action: string,
          scope: string,
          o: { file: string },
          extra: Record<string, unknown> = {},
        ) =>
          events.push({
            actor,
            action,
            scope,
            details: { commit, author, file: o.file, repoUrl: source.repoUrl, ...extra },
          });
        for (const o of upserts) {
          const verb = created.has(keyOf(o.kind, o.name)) ? 'created' : 'updated';
          switch (o.kind) {
            case 'Project': {
              await tx.project.upsert({
                where: { name: o.name },
                create: { name: o.name, document: toJson(o.object), ...gitSource(o) },
                update: { document: toJson(o.object), ...gitSource(o) },
              });
              result.projects.push(o.name);
              event(`project.${verb}`, `project:${o.name}`, o);
              break;
            }
            case 'ApplicationSet': {
              const doc = readAppSetDocument(o.object);
              const project = projectNameOf(doc.document);
              const repoUrls = [...literalRepoRefs(doc.document).keys()].sort();
              const data = {
                apiVersion: doc.apiVersion,
                spec: toJson(doc.document),
                repoUrls,
                project: 'name' in project ? project.name : 'default',
                ...gitSource(o),
              };
              const row = await tx.applicationSet.upsert({
                where: { name: o.name },
                create: { name: o.name, ...data },
                update: { ...data, status: 'Pending' },
              });
              result.appSetIds.push(row.id);
              event(`appset.${verb}`, `appset:${o.name}`, o, { repoUrls });
              break;
            }
            case 'ClusterGroup':
              event(`cluster-group.${verb}`, `cluster-group:${o.name}`, o, { spec: o.object.spec });
              break;
            case 'NotificationPolicy': {
              const spec = o.object.spec;
              await checkPolicyDestinations(tx, spec);
              const data = {
                spec: toJson(spec),
                managedBy: 'git',
                fleetSourceId: source.id,
                sourceCommit: commit,
              };
              await tx.notificationPolicy.upsert({
                where: { name: o.name },
                create: { name: o.name, ...data },
                update: data,
              });
              event(`notification-policy.${verb}`, `notification-policy:${o.name}`, o, { spec });
              break;
            }
            case 'SyncWindow':
              break; // through the windows service, after this transaction
            case 'RolloutStrategy':
              event(`rollout-strategy.${verb}`, `rollout-strategy:${o.name}`, o);
              break;
            case 'HealthRule':
              event(`health-rule.${verb}`, `health-rule:${o.name}`, o);
              break;
          }
          const row = {
            divergedAt: null,
            divergedBy: null,
            divergedUnder: null,
            fleetSourceId: source.id,
            file: o.file,
            document: o.document,
            commit,
            author,
            object: toJson(o.object),
          };
          await tx.fleetManaged.upsert({
            where: { kind_name: { kind: o.kind, name: o.name } },
            create: { kind: o.kind, name: o.name, ...row },
            update: row,
          });
        }
        for (const m of plan.delete) {
          if (m.kind === 'ApplicationSet') {
            const gone = await tx.applicationSet.findUnique({
              where: { name: m.name },
              include: { targets: { select: { clusterId: true } } },
            });
            if (gone) {
              const removed = await removeAppSet(tx, gone);
              result.clusterIds.push(...removed.clusterIds);
              events.push(...removed.audit);
            }
            event('appset.deleted', `appset:${m.name}`, m);
          } else if (m.kind === 'Project') {
            await tx.project.deleteMany({ where: { name: m.name } });
            event('project.deleted', `project:${m.name}`, m);
          } else if (m.kind === 'ClusterGroup') {
            event('cluster-group.deleted', `cluster-group:${m.name}`, m);
          } else if (m.kind === 'NotificationPolicy') {
            await tx.notificationPolicy.deleteMany({ where: { name: m.name, managedBy: 'git' } });
            event('notification-policy.deleted', `notification-policy:${m.name}`, m);
          } else if (m.kind === 'RolloutStrategy') {
            event('rollout-strategy.deleted', `rollout-strategy:${m.name}`, m);
          } else if (m.kind === HEALTH_RULE_KIND) {
            event('health-rule.deleted', `health-rule:${m.name}`, m);
          }
          if (m.kind !== 'SyncWindow')
            await tx.fleetManaged.delete({ where: { kind_name: { kind: m.kind, name: m.name } } });
        }
        result.labelsChanged = await this.applyClusterLabels(tx, managedGroups(plan, managed, source.id));
        events.push({
          actor,
          action: confirmation ? 'fleet.applied-confirmed' : 'fleet.applied',
          scope: `fleet-source:${source.id}`,
          details: {
            repoUrl: source.repoUrl,
            commit,
            author,
            created: plan.create.map((o) => keyOf(o.kind, o.name)),
            updated: plan.update.map((o) => keyOf(o.kind, o.name)),
            deleted: plan.delete.map((m) => keyOf(m.kind, m.name)),
            ...(confirmation && { confirmedBy: confirmation.actor, reason: confirmation.reason }),
          },
        });
        await tx.fleetSource.update({
          where: { id: source.id },
          data: {
            status: 'Ready',
            error: Prisma.DbNull,
            pendingDeletion: Prisma.DbNull,
            appliedCommit: commit,
            appliedAuthor: author,
            appliedAt: new Date(),
            seenCommit: commit,
            guardBaseline,
          },
        });
        // Audit events go last in the transaction (the chain lock is held until commit).
        await this.audit.recordMany(events, tx);
      },
      { timeout: 60_000 },
    );
    return result;
  }

  /**
   * Cluster labels from every ClusterGroup the fleet sources manage: a label a group set is removed
   * when no group sets it any more; labels set through the API on other keys are left alone.
   */
  private async applyClusterLabels(
    tx: Prisma.TransactionClient,
    change: { before: GroupSpec[]; after: GroupSpec[] },
  ): Promise<boolean> {
    if (change.before.length === 0 && change.after.length === 0) return false;
    const clusters = await tx.cluster.findMany({ select: { id: true, name: true, labels: true } });
    let changed = false;
    for (const c of clusters) {
      const labels = asRecord(c.labels);
      const next = relabelCluster(c.name, labels, change.before, change.after);
      if (JSON.stringify(sortKeys(next)) === JSON.stringify(sortKeys(labels))) continue;
      await tx.cluster.update({ where: { id: c.id }, data: { labels: toJson(next) } });
      changed = true;
    }
    return changed;
  }

  private async applyWindows(plan: FleetPlan, commit: string, author: string): Promise<void> {
    const actor = `git:${author}`;
    for (const o of [...plan.create, ...plan.update]) {
      if (o.kind !== 'SyncWindow') continue;
      const { projects, ...window } = o.object.spec;
      const input = {
        window,
        projects: [...new Set(projects)].sort(),
        description: o.object.metadata.annotations?.['description'] ?? '',
        reason: `fleet commit ${commit.slice(0, 12)} (${o.file})`,
      };
      const exists = await this.db.prisma.syncWindow.findUnique({ where: { name: o.name } });
      if (exists && !exists.deletedAt) await this.windows.update(o.name, input, actor);
      else await this.windows.create(o.name, input, actor);
    }
    for (const m of plan.delete) {
      if (m.kind !== 'SyncWindow') continue;
      const exists = await this.db.prisma.syncWindow.findUnique({ where: { name: m.name } });
      if (exists && !exists.deletedAt)
        await this.windows.remove(m.name, `fleet commit ${commit.slice(0, 12)} removed ${m.file}`, actor);
      await this.db.prisma.fleetManaged.deleteMany({ where: { kind: m.kind, name: m.name } });
    }
  }

  private async afterApply(applied: {
    appSetIds: string[];
    projects: string[];
    labelsChanged: boolean;
    clusterIds: string[];
    healthRulesChanged: boolean;
  }): Promise<void> {
    for (const id of applied.appSetIds) {
      const row = await this.db.prisma.applicationSet.findUnique({ where: { id } });
      for (const url of row?.repoUrls ?? []) await this.repos.register(url, `appset:${row?.name ?? ''}`);
      await this.expansions.requestExpand(id);
    }
    for (const name of applied.projects) await this.projects.reconsider(name);
    if (applied.labelsChanged) await this.expansions.requestExpandAll();
    // An appset's rollout strategy and project travel in its assignments even when no target changes.
    const appSetClusters = await this.appsets.clustersOf(applied.appSetIds);
    const everyCluster = applied.healthRulesChanged ? await this.everyClusterId() : [];
    await this.wakeups.notify([...applied.clusterIds, ...appSetClusters, ...everyCluster]);
  }

  private async fail(
    source: FleetSource,
    commit: string | null,
    error: Record<string, unknown>,
  ): Promise<void> {
    const same =
      source.status === 'Error' &&
      source.seenCommit === commit &&
      JSON.stringify(source.error) === JSON.stringify(error);
    if (same) return;
    await this.db.prisma.fleetSource.update({
      where: { id: source.id },
      data: { status: 'Error', error: toJson(error), ...(commit !== null && { seenCommit: commit }) },
    });
    await this.audit.record({
      actor: 'hub',
      action: 'fleet.rejected',
      scope: `fleet-source:${source.id}`,
      details: { repoUrl: source.repoUrl, commit, ...error },
    });
    this.logger.warn(`fleet source ${source.repoUrl}: ${String(error['code'])}: ${String(error['message'])}`);
  }

  /** The targets of the appsets this source manages now, and of those the plan deletes. */
  private async targetsAtStake(
    sourceId: string,
    managed: readonly ManagedEntry[],
    plan: FleetPlan,
  ): Promise<{ current: number; deleting: number }> {
    const names = managed
      .filter((m) => m.fleetSourceId === sourceId && m.kind === 'ApplicationSet')
      .map((m) => m.name);
    if (names.length === 0) return { current: 0, deleting: 0 };
    const rows = await this.db.prisma.applicationSet.findMany({
      where: { name: { in: names } },
      select: { name: true, _count: { select: { targets: true } } },
    });
    const going = new Set(plan.delete.filter((m) => m.kind === 'ApplicationSet').map((m) => m.name));
    let current = 0;
    let deleting = 0;
    for (const r of rows) {
      current += r._count.targets;
      if (going.has(r.name)) deleting += r._count.targets;
    }
    return { current, deleting };
  }

  /** `Name <email>` of the commit's author, read from the mirror. */
  private async authorOf(repositoryId: string, commit: string): Promise<string> {
    const { stdout } = await run('git', [
      '-C',
      this.mirrors.mirrors.dirOf(repositoryId),
      'log',
      '-1',
      '--format=%an <%ae>',
      commit,
    ]);
    return stdout.trim();
  }
}

interface GroupSpec {
  clusters: string[];
  clusterPatterns: string[];
  labels: Record<string, string>;
}

/**
 * This source's ClusterGroups as last applied (`before`) and as the commit has them (`after`): the
 * labels of `before` are taken off the clusters they picked, then those of `after` are put on.
 */
function managedGroups(
  plan: FleetPlan,
  managed: readonly ManagedEntry[],
  sourceId: string,
): { before: GroupSpec[]; after: GroupSpec[] } {
  const before = managed
    .filter((m) => m.kind === 'ClusterGroup' && m.fleetSourceId === sourceId)
    .map((m) => groupSpec(m.object));
  const after = [...plan.create, ...plan.update, ...plan.unchanged]
    .filter((o) => o.kind === 'ClusterGroup')
    .map((o) => groupSpec(o.object));
  return { before, after };
}

/**
 * What the API's checks (checkAppSetDocument) say about each ApplicationSet of the commit, as fleet
 * errors naming its file, document and field, so the refusal reads like any other invalid object.
 */
function hubChecks(objects: readonly FleetObject[]): FleetError[] {
  const errors: FleetError[] = [];
  for (const o of objects) {
    if (o.kind !== 'ApplicationSet') continue;
    try {
      checkAppSetDocument(readAppSetDocument(o.object).document);
    } catch (e) {
      if (!(e instanceof HubError)) throw e;
      errors.push({
        code: 'invalid-field',
        file: o.file,
        document: o.document,
        line: o.line,
        kind: o.kind,
        name: o.name,
        path: e.path ?? '(root)',
        message: e.message,
      });
    }
  }
  return errors;
}

function groupSpec(object: unknown): GroupSpec {
  const spec = (object as { spec?: Partial<GroupSpec> }).spec ?? {};
  return {
    clusters: spec.clusters ?? [],
    clusterPatterns: spec.clusterPatterns ?? [],
    labels: spec.labels ?? {},
  };
}

function sortKeys(o: Record<string, string>): [string, string][] {
  return Object.entries(o).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
}

function view(r: FleetSource) {
  return {
    id: r.id,
    repoUrl: r.repoUrl,
    revision: r.revision,
    path: r.path,
    status: r.status,
    error: r.error ?? null,
    pendingDeletion: r.pendingDeletion ?? null,
    appliedCommit: r.appliedCommit,
    appliedAuthor: r.appliedAuthor,
    appliedAt: r.appliedAt?.toISOString() ?? null,
    seenCommit: r.seenCommit,
    createdAt: r.createdAt.toISOString(),
  };
}
