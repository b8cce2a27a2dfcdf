import { randomUUID } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import {
  type BulkSyncView,
  type KubeObject,
  type ObjectRef,
  type SyncOperation,
  type TargetOperationView,
  groupOf,
  SyncOptionError,
} from '@flotilla/contract';
import { labelSelectorSchema } from '@flotilla/labels';
import { z } from 'zod';
import { AuditLog } from '../audit/audit.service.js';
import { HubError, parseInput } from '../common/hub-error.js';
import { Database } from '../db/database.js';
import { ClusterWakeups } from '../wakeups/cluster-wakeups.service.js';
import { selectTargets } from '../desired-state/target-selection.js';
import { runSyncSettingsOf } from '../desired-state/sync-policy.js';
import type { Prisma, TargetOperation } from '../generated/prisma/client.js';

const syncRequestSchema = z.strictObject({
  reason: z.string().trim().min(1, 'say why (it goes to the audit log and the sync history)').max(1000),
  /** Delete what Git no longer declares in this run, even when the appset does not prune. */
  prune: z.boolean().default(false),
  /** Ask the cluster what this sync would do (server-side apply with dryRun=All); change nothing. */
  dryRun: z.boolean().default(false),
  /** An agent that does not come back within this long never runs it (default one hour). */
  expiresInMinutes: z
    .number()
    .int()
    .min(1)
    .max(7 * 24 * 60)
    .default(60),
  /** Sync options for this run only, `Key=Value` as in an appset's syncOptions (the same table). */
  syncOptions: z.array(z.string().max(200)).max(20).default([]),
  /** Argo CD's `--force`: an object whose apply the API refuses is deleted and created again (Force=true). */
  force: z.boolean().default(false),
});

/** A declared object, as `flotilla sync --resource group/kind/namespace/name` names it. */
const resourceRefSchema = z.strictObject({
  group: z.string().max(253).default(''),
  kind: z.string().min(1).max(100),
  namespace: z.string().max(253).optional(),
  name: z.string().min(1).max(253),
});

/** One target: also a revision and a subset of its objects (they depend on what that target runs). */
const singleSyncRequestSchema = syncRequestSchema.extend({
  /** The revision to sync: only the one the target is assigned (full or at least 7 hex digits). */
  revision: z.string().trim().min(1).max(64).optional(),
  /** Only these declared objects (a selective sync: no hooks, no prune, no waves waited for). */
  resources: z.array(resourceRefSchema).min(1).max(500).optional(),
});

/** At most this many targets per request: a larger selection is refused, never cut silently. */
export const MAX_BULK_TARGETS = 1000;

const bulkSyncRequestSchema = syncRequestSchema
  .extend({
    /** Every target of this appset (with `clusterSelector`: those on matching clusters). */
    appSet: z.string().trim().min(1).optional(),
    /** Targets on clusters whose labels match (with `appSet`: of that appset only). */
    clusterSelector: labelSelectorSchema.optional(),
    /** Say which targets would be asked, and ask none. */
    preview: z.boolean().default(false),
  })
  .refine((r) => r.appSet !== undefined || r.clusterSelector !== undefined, {
    message: 'name an appSet, a clusterSelector, or both (a sync of the whole fleet is not offered)',
    path: ['appSet'],
  });

const batchQuerySchema = z.strictObject({ batchId: z.uuid() });

const cancelRequestSchema = z.strictObject({
  reason: z.string().trim().min(1, 'say why (it goes to the audit log)').max(1000),
});

/**
 * Why a sync asked of a target could never run, or null: nothing released to its cluster yet, or it
 * is being deleted (its agent gets a tombstone instead of an assignment, so the request would only
 * wait until it expired).
 */
function unsyncable(t: {
  releasedDigest: string | null;
  pin: unknown;
  deletionState: string | null;
}): { code: string; reason: string } | null {
  if (t.deletionState !== null)
    return { code: 'target-deleting', reason: 'is being deleted with its objects' };
  if (!t.releasedDigest && !t.pin)
    return {
      code: 'target-not-released',
      reason: 'has no released revision yet (still rendering, or held by its rollout)',
    };
  return null;
}

/** Rows still to be carried out: the agent gets these in its assignments. */
const pendingWhere = (now: Date) => ({ state: 'Pending', expiresAt: { gt: now } });

/**
 * Syncs people ask for. A request is a row; it reaches the agent in its assignments (any replica
 * answers the long-poll: the wake-up goes through Redis) and stays there until the agent reports a
 * run with its id, so an agent that is offline runs it when it comes back, unless it expired first.
 * The agent runs an id at most once; its report closes the row, once (agent-gateway/report-ingest).
 */
@Injectable()
export class TargetOperations {
  constructor(
    private readonly db: Database,
    private readonly audit: AuditLog,
    private readonly wakeups: ClusterWakeups,
  ) {}

  /**
   * One sync request per target of an appset and/or a cluster label selection, in one transaction
   * (all are asked or none), each with its own operation and audit event, sharing a batch id.
   * Targets with nothing released yet are left out and said so; a preview asks nothing.
   */
  async requestBulkSync(body: unknown, actor: string): Promise<BulkSyncView> {
    const req = parseInput(bulkSyncRequestSchema, body);
    const settings = runSettings(req);
    const chosen = await selectTargets(this.db, req);
    const ready = chosen.filter((t) => unsyncable(t) === null);
    const skipped = chosen.flatMap((t) => {
      const why = unsyncable(t);
      return why ? [{ target: t.name, reason: why.reason }] : [];
    });
    if (ready.length > MAX_BULK_TARGETS)
      throw new HubError(
        422,
        'too-many-targets',
        `${ready.length} targets match; at most ${MAX_BULK_TARGETS} are synced per request: narrow the clusterSelector or name an appSet`,
        req.clusterSelector ? 'clusterSelector' : 'appSet',
      );
    const targets = ready.map((t) => t.name);
    if (req.preview) return { batchId: null, preview: true, targets, operations: [], skipped };
    if (ready.length === 0)
      throw new HubError(
        409,
        'nothing-to-sync',
        `none of the ${chosen.length} matching targets can be synced: ${skipped[0]?.reason ?? ''}`,
      );

    const batchId = randomUUID();
    const expiresAt = new Date(Date.now() + req.expiresInMinutes * 60_000);
    const selection = {
      ...(req.appSet !== undefined && { appSet: req.appSet }),
      ...(req.clusterSelector && { clusterSelector: req.clusterSelector }),
    };
    // One multi-row insert and one audit append, so a thousand targets are asked in one short
    // transaction; the ids are made here to pair each audit event with its operation.
    const rows = ready.map((t) => ({
      id: randomUUID(),
      targetId: t.id,
      targetName: t.name,
      clusterId: t.clusterId,
      kind: 'sync',
      options: { prune: req.prune, dryRun: req.dryRun, ...runOptions(req, settings) },
      batchId,
      requestedBy: actor,
      reason: req.reason,
      expiresAt,
    }));
    const ops = await this.db.prisma.$transaction(async (tx) => {
      const created = await tx.targetOperation.createManyAndReturn({ data: rows });
      await this.audit.recordMany(
        rows.map((r) => ({
          actor,
          action: 'target.sync-requested',
          scope: `target:${r.targetName}`,
          details: {
            operationId: r.id,
            batchId,
            selection,
            prune: req.prune,
            dryRun: req.dryRun,
            ...runOptions(req, settings),
            reason: req.reason,
            expiresAt,
          },
        })),
        tx,
      );
      return created.sort((a, b) => a.targetName.localeCompare(b.targetName));
    });
    await this.wakeups.notify([...new Set(ready.map((t) => t.clusterId))]);
    return { batchId, preview: false, targets, operations: ops.map(view), skipped };
  }

  /**
   * Withdraws a request its agent has not run: it leaves the cluster's assignments at once. An agent
   * that already started it finishes that run (it shows in history); its report then changes nothing
   * here, since only a Pending request is closed by a report.
   */
  async cancel(operationId: string, body: unknown, actor: string): Promise<TargetOperationView> {
    const { reason } = parseInput(cancelRequestSchema, body);
    return this.changePending(operationId, actor, reason, {
      verb: 'cancel',
      done: 'cancelled',
      action: 'target.sync-cancelled',
      data: { state: 'Cancelled', message: `cancelled by ${actor}: ${reason}`, finishedAt: new Date() },
    });
  }

  /**
   * Asks the agent to stop a request it may be running. The request stays in the assignments,
   * marked, until the agent reports: a run going stops at its next safe point (before the next
   * object, or while it waits for a wave or a hook) and is reported Terminated with what it applied;
   * one not started yet is reported Terminated with nothing applied. Either way one report closes it,
   * so it is never left half-recorded. A request already finished answers 409.
   */
  async terminate(operationId: string, body: unknown, actor: string): Promise<TargetOperationView> {
    const { reason } = parseInput(cancelRequestSchema, body);
    return this.changePending(operationId, actor, reason, {
      verb: 'terminate',
      done: 'terminated',
      action: 'target.sync-terminate-requested',
      refuse: (current) =>
        current.terminateRequestedBy === null
          ? undefined
          : new HubError(
              409,
              'operation-terminating',
              `operation ${operationId} is being terminated already (asked by ${current.terminateRequestedBy})`,
            ),
      where: { terminateRequestedBy: null },
      data: { terminateRequestedBy: actor, terminateReason: reason, terminateRequestedAt: new Date() },
    });
  }

  /**
   * One change to a request that is still Pending, audited, in one transaction: the row is read, a
   * finished one answers 409, and the write is conditional on it being Pending still, so a report
   * closing it between the read and the write also answers 409 instead of being overwritten.
   */
  private async changePending(
    operationId: string,
    actor: string,
    reason: string,
    change: {
      verb: string;
      done: string;
      action: string;
      refuse?: (current: TargetOperation) => HubError | undefined;
      where?: Prisma.TargetOperationWhereInput;
      data: Prisma.TargetOperationUpdateManyMutationInput;
    },
  ): Promise<TargetOperationView> {
    const op = await this.db.prisma.$transaction(async (tx) => {
      const current = await tx.targetOperation.findUnique({ where: { id: operationId } });
      if (!current) throw HubError.notFound('operation', operationId);
      const state = view(current).state;
      if (state !== 'Pending')
        throw new HubError(
          409,
          'operation-finished',
          `operation ${operationId} is ${state}: only a Pending one can be ${change.done}`,
        );
      const refused = change.refuse?.(current);
      if (refused) throw refused;
      const updated = await tx.targetOperation.updateMany({
        where: { id: operationId, state: 'Pending', ...change.where },
        data: change.data,
      });
      if (updated.count === 0)
        throw new HubError(
          409,
          'operation-finished',
          `operation ${operationId} finished meanwhile: nothing to ${change.verb}`,
        );
      await this.audit.record(
        {
          actor,
          action: change.action,
          scope: `target:${current.targetName}`,
          details: { operationId, reason },
        },
        tx,
      );
      return tx.targetOperation.findUniqueOrThrow({ where: { id: operationId } });
    });
    await this.wakeups.notify([op.clusterId]);
    return view(op);
  }

  async requestSync(targetName: string, body: unknown, actor: string): Promise<TargetOperationView> {
    const req = parseInput(singleSyncRequestSchema, body);
    const settings = runSettings(req);
    const target = await this.db.prisma.target.findUnique({
      where: { name: targetName },
      select: {
        id: true,
        name: true,
        clusterId: true,
        namespace: true,
        releasedDigest: true,
        releasedRevision: true,
        desiredRevision: true,
        deletionState: true,
        pin: { select: { targetId: true, revision: true, bundleDigest: true, expiresAt: true } },
      },
    });
    if (!target) throw HubError.notFound('target', targetName);
    const why = unsyncable(target);
    if (why) throw new HubError(409, why.code, `target "${targetName}" ${why.reason}: nothing to sync`);
    // What the agent is given: a pin (unexpired) wins over the release, as in its assignments.
    const pinned = target.pin && (!target.pin.expiresAt || target.pin.expiresAt.getTime() > Date.now());
    const assigned = pinned
      ? { revision: target.pin!.revision, digest: target.pin!.bundleDigest, why: 'pinned' }
      : { revision: target.releasedRevision ?? '', digest: target.releasedDigest ?? '', why: 'released' };
    let revision: string | undefined;
    if (req.revision !== undefined) {
      const asked = req.revision.toLowerCase();
      if (!/^[0-9a-f]{7,64}$/.test(asked) || !assigned.revision.startsWith(asked))
        throw new HubError(
          422,
          'revision-not-assigned',
          `target "${targetName}" is assigned revision ${assigned.revision.slice(0, 12)} (${assigned.why}${
            !pinned && target.desiredRevision !== assigned.revision
              ? `; Git wants ${target.desiredRevision.slice(0, 12)}, not released to it yet`
              : ''
          }): a sync runs the revision its agent is given, so ${req.revision} cannot be synced by itself — pin the target to a revision it ran (POST /api/v1/targets/${targetName}/pin) and sync that`,
          'revision',
        );
      revision = assigned.revision;
    }
    const resources = req.resources
      ? await this.declaredRefs(assigned.digest, target.namespace, req.resources)
      : undefined;
    const now = new Date();
    const op = await this.db.prisma.$transaction(async (tx) => {
      const created = await tx.targetOperation.create({
        data: {
          targetId: target.id,
          targetName: target.name,
          clusterId: target.clusterId,
          kind: 'sync',
          options: {
            prune: req.prune,
            dryRun: req.dryRun,
            ...runOptions(req, settings),
            ...(revision !== undefined && { revision }),
            ...(resources && { resources }),
          },
          requestedBy: actor,
          reason: req.reason,
          expiresAt: new Date(now.getTime() + req.expiresInMinutes * 60_000),
        },
      });
      await this.audit.record(
        {
          actor,
          action: 'target.sync-requested',
          scope: `target:${target.name}`,
          details: {
            operationId: created.id,
            prune: req.prune,
            dryRun: req.dryRun,
            ...runOptions(req, settings),
            ...(revision !== undefined && { revision }),
            ...(resources && { resources }),
            reason: req.reason,
            expiresAt: created.expiresAt,
          },
        },
        tx,
      );
      return created;
    });
    await this.wakeups.notify([target.clusterId]);
    return view(op);
  }

  /**
   * The objects a selective sync names, each checked against the bundle the target's agent runs (a
   * namespaced object named without a namespace is in the target's). A hook or an object the bundle
   * does not declare is refused, naming it.
   */
  private async declaredRefs(digest: string, namespace: string, refs: ObjectRef[]): Promise<ObjectRef[]> {
    const bundle = await this.db.prisma.bundle.findUnique({ where: { digest }, select: { manifests: true } });
    const manifests = (bundle?.manifests ?? []) as unknown as KubeObject[];
    return refs.map((ref, i) => {
      const found = manifests.find(
        (m) =>
          groupOf(m.apiVersion) === ref.group &&
          m.kind === ref.kind &&
          m.metadata.name === ref.name &&
          (ref.namespace === undefined || (m.metadata.namespace ?? namespace) === ref.namespace),
      );
      const named = `${ref.group}/${ref.kind}/${ref.namespace ?? ''}/${ref.name}`;
      if (!found)
        throw new HubError(
          422,
          'resource-not-declared',
          `${named} is not declared by the bundle the target runs (${digest.slice(0, 19)}): a selective sync applies only declared objects`,
          `resources[${i}]`,
        );
      const annotations = found.metadata.annotations ?? {};
      if (
        annotations['argocd.argoproj.io/hook'] ||
        annotations['helm.sh/hook'] ||
        annotations['flotilla.dev/hook']
      )
        throw new HubError(
          422,
          'resource-is-hook',
          `${named} is a hook: hooks do not run in a selective sync (as in Argo CD); sync the whole target`,
          `resources[${i}]`,
        );
      // Namespaced objects carry their namespace, so the agent matches what it applies.
      const ns =
        ref.namespace ?? found.metadata.namespace ?? (isClusterScopedGuess(found) ? undefined : namespace);
      return { group: ref.group, kind: ref.kind, ...(ns ? { namespace: ns } : {}), name: ref.name };
    });
  }

  /** The operations one request asked for many targets, by target name (what `--wait` follows). */
  async listBatch(query: unknown): Promise<TargetOperationView[]> {
    const { batchId } = parseInput(batchQuerySchema, query, 'query');
    const rows = await this.db.prisma.targetOperation.findMany({
      where: { batchId },
      orderBy: { targetName: 'asc' },
    });
    if (rows.length === 0) throw HubError.notFound('batch', batchId);
    return rows.map(view);
  }

  async list(targetName: string): Promise<TargetOperationView[]> {
    const rows = await this.db.prisma.targetOperation.findMany({
      where: { targetName },
      orderBy: { createdAt: 'desc' },
      take: 100,
    });
    return rows.map(view);
  }

  /** The operations each of a cluster's targets still has to run, oldest first, by target id. */
  async pendingFor(clusterId: string, now = new Date()): Promise<Map<string, SyncOperation[]>> {
    const rows = await this.db.prisma.targetOperation.findMany({
      where: { clusterId, ...pendingWhere(now) },
      orderBy: { createdAt: 'asc' },
      take: 1000,
    });
    const byTarget = new Map<string, SyncOperation[]>();
    for (const r of rows) {
      const list = byTarget.get(r.targetId) ?? [];
      const { prune, dryRun, revision, resources, syncPolicy } = optionsOf(r);
      // dryRun and terminate only when asked, so that every other assignment reads as before (and its ETag stays).
      list.push({
        id: r.id,
        prune,
        ...(dryRun && { dryRun }),
        ...(revision !== undefined && { revision }),
        ...(resources && { resources }),
        ...(syncPolicy && { syncPolicy }),
        requestedBy: r.requestedBy,
        reason: r.reason,
        ...(r.terminateRequestedBy !== null && {
          terminate: { requestedBy: r.terminateRequestedBy, reason: r.terminateReason ?? '' },
        }),
      });
      byTarget.set(r.targetId, list);
    }
    return byTarget;
  }

  /** The soonest expiry among a cluster's pending operations (its assignments change then). */
  async nextExpiry(clusterId: string, now = new Date()): Promise<number | undefined> {
    const next = await this.db.prisma.targetOperation.findFirst({
      where: { clusterId, ...pendingWhere(now) },
      orderBy: { expiresAt: 'asc' },
      select: { expiresAt: true },
    });
    return next?.expiresAt.getTime();
  }
}

/** What one run was asked for beyond the defaults, as stored in `options` and shown in views. */
interface RunOptions {
  prune: boolean;
  dryRun: boolean;
  force?: boolean;
  syncOptions?: string[];
  revision?: string;
  resources?: ObjectRef[];
  syncPolicy?: NonNullable<SyncOperation['syncPolicy']>;
}

function optionsOf(r: TargetOperation): RunOptions {
  const o = (r.options ?? {}) as Omit<RunOptions, 'prune' | 'dryRun'> & { prune?: unknown; dryRun?: unknown };
  return {
    prune: o.prune === true,
    dryRun: o.dryRun === true,
    ...(o.force === true && { force: true }),
    ...(o.syncOptions?.length && { syncOptions: o.syncOptions }),
    ...(o.revision !== undefined && { revision: o.revision }),
    ...(o.resources?.length && { resources: o.resources }),
    ...(o.syncPolicy && Object.keys(o.syncPolicy).length > 0 && { syncPolicy: o.syncPolicy }),
  };
}

/** The per-run sync options and --force, read against the appset's option table (refused by name). */
function runSettings(req: {
  syncOptions: string[];
  force: boolean;
}): NonNullable<SyncOperation['syncPolicy']> {
  try {
    const settings = runSyncSettingsOf(req.syncOptions, 'syncOptions');
    const out: NonNullable<SyncOperation['syncPolicy']> = {};
    for (const [k, v] of Object.entries(settings)) if (v !== undefined) Object.assign(out, { [k]: v });
    if (req.force) out.force = true;
    return out;
  } catch (e) {
    if (e instanceof SyncOptionError) throw new HubError(422, e.code, e.message, e.path);
    throw e;
  }
}

/** What `options` stores of the per-run settings: only what was asked. */
function runOptions(
  req: { syncOptions: string[]; force: boolean },
  settings: NonNullable<SyncOperation['syncPolicy']>,
): Partial<RunOptions> {
  return {
    ...(req.force && { force: true }),
    ...(req.syncOptions.length > 0 && { syncOptions: req.syncOptions }),
    ...(Object.keys(settings).length > 0 && { syncPolicy: settings }),
  };
}

/** Kinds that are never namespaced, for a manifest that names no namespace. */
function isClusterScopedGuess(m: KubeObject): boolean {
  return [
    'Namespace',
    'CustomResourceDefinition',
    'ClusterRole',
    'ClusterRoleBinding',
    'PersistentVolume',
    'StorageClass',
    'PriorityClass',
    'IngressClass',
    'ValidatingWebhookConfiguration',
    'MutatingWebhookConfiguration',
    'APIService',
  ].includes(m.kind);
}

function view(r: TargetOperation): TargetOperationView {
  return {
    id: r.id,
    target: r.targetName,
    kind: r.kind,
    ...viewOptions(optionsOf(r)),
    batchId: r.batchId,
    requestedBy: r.requestedBy,
    reason: r.reason,
    state: r.state === 'Pending' && r.expiresAt.getTime() <= Date.now() ? 'Expired' : r.state,
    message: r.message,
    createdAt: r.createdAt.toISOString(),
    expiresAt: r.expiresAt.toISOString(),
    finishedAt: r.finishedAt?.toISOString() ?? null,
    terminate:
      r.terminateRequestedBy === null
        ? null
        : {
            requestedBy: r.terminateRequestedBy,
            reason: r.terminateReason ?? '',
            requestedAt: (r.terminateRequestedAt ?? r.createdAt).toISOString(),
          },
  };
}

function viewOptions(
  o: RunOptions,
): Pick<TargetOperationView, 'prune' | 'dryRun' | 'force' | 'syncOptions' | 'revision' | 'resources'> {
  return {
    prune: o.prune,
    dryRun: o.dryRun,
    force: o.force === true,
    syncOptions: o.syncOptions ?? [],
    revision: o.revision ?? null,
    resources: o.resources ?? [],
  };
}
