// Applies a planned fleet commit: the hub's objects in one transaction, then sync windows through their service.
import type { AuditActor } from '@flotilla/contract';
import { Injectable } from '@nestjs/common';
import { projectNameOf } from '@flotilla/fleet-config';
import { literalRepoRefs } from '@flotilla/generators';
import { relabelCluster } from '@flotilla/plan';
import { AuditLog, type AuditEntry } from '../audit/audit.service.js';
import { asRecord, toJson } from '../common/json.js';
import { Database } from '../db/database.js';
import { readAppSetDocument } from '../desired-state/appset-document.js';
import { removeAppSet } from '../desired-state/target-deletions.service.js';
import { Prisma, type FleetSource } from '../generated/prisma/client.js';
import { HEALTH_RULE_KIND } from '../health-rules/health-rules.service.js';
import { checkPolicyDestinations } from '../notifications/notifications.service.js';
import { WindowsService } from '../release/windows/windows.service.js';
import { VerificationSettingsService } from '../sources/verification/verification-settings.service.js';
import { managedGroups, sameLabels, type GroupSpec } from './cluster-groups.js';
import { applyFleetPolicies, type FleetPolicies } from './fleet-policies.js';
import { APPLY_ORDER, keyOf, type FleetPlan, type ManagedEntry, type PlannedObject } from './fleet-plan.js';

/** A person's go-ahead for a commit the deletion guard holds. */
export interface FleetConfirmation {
  commit: string;
  reason: string;
  actor: AuditActor;
}

/** What an applied commit changed that others must hear of (see FleetFollowUp). */
export interface AppliedCommit {
  appSetIds: string[];
  projects: string[];
  labelsChanged: boolean;
  clusterIds: string[];
  healthRulesChanged: boolean;
  /** Admission policies, bindings or params changed: every target's bundle is judged again. */
  policiesChanged: boolean;
}

/** One commit's transaction: what it writes with, and what it collects on the way. */
interface ApplyContext {
  tx: Prisma.TransactionClient;
  source: FleetSource;
  commit: string;
  author: string;
  events: AuditEntry[];
  result: AppliedCommit;
}

/**
 * Projects, ApplicationSets, notification policies, cluster labels (ClusterGroup) and admission
 * policies with their params are created, updated and deleted in one transaction, each recording its commit, author and file; SyncWindows
 * go through the windows service afterwards.
 */
@Injectable()
export class FleetApply {
  constructor(
    private readonly db: Database,
    private readonly audit: AuditLog,
    private readonly windows: WindowsService,
    private readonly verifications: VerificationSettingsService,
  ) {}

  async apply(
    source: FleetSource,
    commit: string,
    author: string,
    plan: FleetPlan,
    managed: readonly ManagedEntry[],
    guardBaseline: number,
    policies: FleetPolicies,
    confirmation?: FleetConfirmation,
  ): Promise<AppliedCommit> {
    const order = (o: { kind: string }) => APPLY_ORDER.indexOf(o.kind as (typeof APPLY_ORDER)[number]);
    const upserts = [...plan.create, ...plan.update].sort((a, b) => order(a) - order(b));
    const created = new Set(plan.create.map((o) => keyOf(o.kind, o.name)));
    const result: AppliedCommit = {
      appSetIds: [],
      projects: [],
      labelsChanged: false,
      clusterIds: [],
      healthRulesChanged: [...plan.create, ...plan.update, ...plan.delete].some(
        (o) => o.kind === HEALTH_RULE_KIND,
      ),
      policiesChanged: false,
    };
    await this.db.prisma.$transaction(
      async (tx) => {
        const ctx: ApplyContext = { tx, source, commit, author, events: [], result };
        for (const o of upserts) {
          await upsertObject(ctx, o, created.has(keyOf(o.kind, o.name)) ? 'created' : 'updated');
        }
        for (const m of plan.delete) await deleteObject(ctx, m);
        result.labelsChanged = await applyClusterLabels(tx, managedGroups(plan, managed, source.id));
        const writer = { sourceId: source.id, repoUrl: source.repoUrl, commit, author };
        result.policiesChanged = await applyFleetPolicies(tx, writer, policies, ctx.events);
        ctx.events.push(appliedEvent(ctx, plan, confirmation));
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
        await this.audit.recordMany(ctx.events, tx);
      },
      { timeout: 60_000 },
    );
    return result;
  }

  /**
   * The commit's SourceVerifications, through the verification settings (after the transaction):
   * each declared repository gets its mode and keys, managed by Git; a removed declaration returns
   * its repository to `none` and to the API.
   */
  async applySourceVerifications(plan: FleetPlan, author: string): Promise<void> {
    const actor: AuditActor = `git:${author}`;
    for (const o of [...plan.create, ...plan.update]) {
      if (o.kind !== 'SourceVerification') continue;
      const { repoURL, ...settings } = o.object.spec;
      await this.verifications.setFromFleet(repoURL, settings, actor);
    }
    for (const m of plan.delete) {
      if (m.kind !== 'SourceVerification') continue;
      const was = m.object as { spec?: { repoURL?: unknown } } | null;
      const url = was?.spec?.repoURL;
      if (typeof url === 'string') await this.verifications.setFromFleet(url, null, actor);
    }
  }

  /** The commit's SyncWindows, through the windows service (after the transaction). */
  async applyWindows(plan: FleetPlan, commit: string, author: string): Promise<void> {
    const actor: AuditActor = `git:${author}`;
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
}

/** Collects an audit event of the commit about `o` (written at the end of the transaction). */
function event(
  ctx: ApplyContext,
  action: string,
  scope: string,
  o: { file: string },
  extra: Record<string, unknown> = {},
): void {
  ctx.events.push({
    actor: `git:${ctx.author}`,
    action,
    scope,
    details: { commit: ctx.commit, author: ctx.author, file: o.file, repoUrl: ctx.source.repoUrl, ...extra },
  });
}

/** What a row managed by Git records of where it comes from. */
function gitSource(ctx: ApplyContext, o: PlannedObject) {
  return {
    managedBy: 'git',
    sourceRepo: ctx.source.repoUrl,
    sourceCommit: ctx.commit,
    sourceAuthor: ctx.author,
    sourceFile: o.file,
  };
}

/** Writes one created or updated object, and the FleetManaged row that says this source manages it. */
async function upsertObject(ctx: ApplyContext, o: PlannedObject, verb: 'created' | 'updated'): Promise<void> {
  const { tx } = ctx;
  switch (o.kind) {
    case 'Project': {
      await tx.project.upsert({
        where: { name: o.name },
        create: { name: o.name, document: toJson(o.object), ...gitSource(ctx, o) },
        update: { document: toJson(o.object), ...gitSource(ctx, o) },
      });
      ctx.result.projects.push(o.name);
      event(ctx, `project.${verb}`, `project:${o.name}`, o);
      break;
    }
    case 'ApplicationSet':
      await upsertAppSet(ctx, o, verb);
      break;
    case 'ClusterGroup':
      event(ctx, `cluster-group.${verb}`, `cluster-group:${o.name}`, o, { spec: o.object.spec });
      break;
    case 'NotificationPolicy': {
      const spec = o.object.spec;
      await checkPolicyDestinations(tx, spec);
      const data = {
        spec: toJson(spec),
        managedBy: 'git',
        fleetSourceId: ctx.source.id,
        sourceCommit: ctx.commit,
      };
      await tx.notificationPolicy.upsert({
        where: { name: o.name },
        create: { name: o.name, ...data },
        update: data,
      });
      event(ctx, `notification-policy.${verb}`, `notification-policy:${o.name}`, o, { spec });
      break;
    }
    case 'SyncWindow':
      break; // through the windows service, after this transaction
    case 'RolloutStrategy':
      event(ctx, `rollout-strategy.${verb}`, `rollout-strategy:${o.name}`, o);
      break;
    case 'SourceVerification':
      // The settings themselves go through their service, after this transaction.
      event(ctx, `source-verification.${verb}`, `source-verification:${o.name}`, o, {
        repoURL: o.object.spec.repoURL,
        mode: o.object.spec.mode,
      });
      break;
    case 'HealthRule':
      event(ctx, `health-rule.${verb}`, `health-rule:${o.name}`, o);
      break;
  }
  const row = {
    divergedAt: null,
    divergedBy: null,
    divergedUnder: null,
    fleetSourceId: ctx.source.id,
    file: o.file,
    document: o.document,
    commit: ctx.commit,
    author: ctx.author,
    object: toJson(o.object),
  };
  await tx.fleetManaged.upsert({
    where: { kind_name: { kind: o.kind, name: o.name } },
    create: { kind: o.kind, name: o.name, ...row },
    update: row,
  });
}

async function upsertAppSet(
  ctx: ApplyContext,
  o: Extract<PlannedObject, { kind: 'ApplicationSet' }>,
  verb: 'created' | 'updated',
): Promise<void> {
  const doc = readAppSetDocument(o.object);
  const project = projectNameOf(doc.document);
  const repoUrls = [...literalRepoRefs(doc.document).keys()].sort();
  const data = {
    apiVersion: doc.apiVersion,
    spec: toJson(doc.document),
    repoUrls,
    project: 'name' in project ? project.name : 'default',
    ...gitSource(ctx, o),
  };
  const row = await ctx.tx.applicationSet.upsert({
    where: { name: o.name },
    create: { name: o.name, ...data },
    update: { ...data, status: 'Pending' },
  });
  ctx.result.appSetIds.push(row.id);
  event(ctx, `appset.${verb}`, `appset:${o.name}`, o, { repoUrls });
}

/** Deletes one object the commit no longer declares (a deleted appset's targets go with it). */
async function deleteObject(ctx: ApplyContext, m: ManagedEntry): Promise<void> {
  const { tx } = ctx;
  if (m.kind === 'ApplicationSet') {
    const gone = await tx.applicationSet.findUnique({
      where: { name: m.name },
      include: { targets: { select: { clusterId: true } } },
    });
    if (gone) {
      const removed = await removeAppSet(tx, gone);
      ctx.result.clusterIds.push(...removed.clusterIds);
      ctx.events.push(...removed.audit);
    }
    event(ctx, 'appset.deleted', `appset:${m.name}`, m);
  } else if (m.kind === 'Project') {
    await tx.project.deleteMany({ where: { name: m.name } });
    event(ctx, 'project.deleted', `project:${m.name}`, m);
  } else if (m.kind === 'ClusterGroup') {
    event(ctx, 'cluster-group.deleted', `cluster-group:${m.name}`, m);
  } else if (m.kind === 'NotificationPolicy') {
    await tx.notificationPolicy.deleteMany({ where: { name: m.name, managedBy: 'git' } });
    event(ctx, 'notification-policy.deleted', `notification-policy:${m.name}`, m);
  } else if (m.kind === 'RolloutStrategy') {
    event(ctx, 'rollout-strategy.deleted', `rollout-strategy:${m.name}`, m);
  } else if (m.kind === 'SourceVerification') {
    event(ctx, 'source-verification.deleted', `source-verification:${m.name}`, m);
  } else if (m.kind === HEALTH_RULE_KIND) {
    event(ctx, 'health-rule.deleted', `health-rule:${m.name}`, m);
  }
  if (m.kind !== 'SyncWindow')
    await tx.fleetManaged.delete({ where: { kind_name: { kind: m.kind, name: m.name } } });
}

/** The audit event of the whole commit: what it created, updated and deleted, and who confirmed it. */
function appliedEvent(ctx: ApplyContext, plan: FleetPlan, confirmation?: FleetConfirmation): AuditEntry {
  return {
    actor: `git:${ctx.author}`,
    action: confirmation ? 'fleet.applied-confirmed' : 'fleet.applied',
    scope: `fleet-source:${ctx.source.id}`,
    details: {
      repoUrl: ctx.source.repoUrl,
      commit: ctx.commit,
      author: ctx.author,
      created: plan.create.map((o) => keyOf(o.kind, o.name)),
      updated: plan.update.map((o) => keyOf(o.kind, o.name)),
      deleted: plan.delete.map((m) => keyOf(m.kind, m.name)),
      ...(confirmation && { confirmedBy: confirmation.actor, reason: confirmation.reason }),
    },
  };
}

/**
 * Cluster labels from every ClusterGroup the fleet sources manage: a label a group set is removed
 * when no group sets it any more; labels set through the API on other keys are left alone.
 */
async function applyClusterLabels(
  tx: Prisma.TransactionClient,
  change: { before: GroupSpec[]; after: GroupSpec[] },
): Promise<boolean> {
  if (change.before.length === 0 && change.after.length === 0) return false;
  const clusters = await tx.cluster.findMany({ select: { id: true, name: true, labels: true } });
  let changed = false;
  for (const c of clusters) {
    const labels = asRecord(c.labels);
    const next = relabelCluster(c.name, labels, change.before, change.after);
    if (sameLabels(next, labels)) continue;
    await tx.cluster.update({ where: { id: c.id }, data: { labels: toJson(next) } });
    changed = true;
  }
  return changed;
}
