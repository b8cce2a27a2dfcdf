import type {
  AuditActor,
  BulkSyncView,
  KubeObject,
  ObjectRef,
  TargetOperationView,
} from '@flotilla/contract';
import { randomUUID } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import { AuditLog } from '../audit/audit.service.js';
import { HubError, parseInput } from '../common/hub-error.js';
import { Database } from '../db/database.js';
import { ClusterWakeups } from '../wakeups/cluster-wakeups.service.js';
import { selectTargets } from '../desired-state/target-selection.js';
import type { Prisma, TargetOperation } from '../generated/prisma/client.js';
import {
  batchQuerySchema,
  bulkSyncRequestSchema,
  cancelRequestSchema,
  singleSyncRequestSchema,
} from './sync-request-schemas.js';
import { runOptions, runSettings } from './run-options.js';
import { operationView as view } from './operation-view.js';
import { assignedRevision, requestedRevision, unsyncable } from './sync-target-checks.js';
import { declaredRefs } from './selective-sync.js';
import { requireSupport, unsupportedBy } from './agent-support.js';

/** At most this many targets per request: a larger selection is refused, never cut silently. */
export const MAX_BULK_TARGETS = 1000;

/**
 * Syncs people ask for. A request is a row; it reaches the agent in its assignments (any replica
 * answers the long-poll: the wake-up goes through Redis) and stays there until the agent reports a
 * run with its id, so an agent that is offline runs it when it comes back, unless it expired first.
 * The agent runs an id at most once; its report closes the row, once (agent-gateway/report-ingest).
 * What the agents are given of these rows: PendingOperations.
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
  async requestBulkSync(body: unknown, actor: AuditActor): Promise<BulkSyncView> {
    const req = parseInput(bulkSyncRequestSchema, body);
    const settings = runSettings(req);
    const chosen = await selectTargets(this.db, req);
    // A target whose agent cannot run what is asked is left out, saying so, like one never released.
    const whyNot = (t: (typeof chosen)[number]) =>
      unsyncable(t)?.reason ?? unsupportedBy(t.cluster, req)?.message;
    const ready = chosen.filter((t) => whyNot(t) === undefined);
    const skipped = chosen.flatMap((t) => {
      const reason = whyNot(t);
      return reason !== undefined ? [{ target: t.name, reason }] : [];
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
          details: { operationId: r.id, batchId, selection, ...r.options, reason: req.reason, expiresAt },
        })),
        tx,
      );
      return created.sort((a, b) => a.targetName.localeCompare(b.targetName));
    });
    await this.wakeups.notify([...new Set(ready.map((t) => t.clusterId))]);
    return { batchId, preview: false, targets, operations: ops.map(view), skipped };
  }

  async requestSync(targetName: string, body: unknown, actor: AuditActor): Promise<TargetOperationView> {
    const req = parseInput(singleSyncRequestSchema, body);
    const settings = runSettings(req);
    const target = await this.syncableTarget(targetName);
    // What the agent cannot run is refused first: no point checking a revision it would ignore.
    requireSupport(target.cluster, req);
    const assigned = assignedRevision(target);
    const revision = requestedRevision(target, assigned, req.revision);
    const resources = req.resources
      ? await this.declaredRefs(assigned.digest, target.namespace, req.resources)
      : undefined;
    const options = {
      prune: req.prune,
      dryRun: req.dryRun,
      ...runOptions(req, settings),
      ...(revision !== undefined && { revision }),
      ...(resources && { resources }),
    };
    const now = new Date();
    const op = await this.db.prisma.$transaction(async (tx) => {
      const created = await tx.targetOperation.create({
        data: {
          targetId: target.id,
          targetName: target.name,
          clusterId: target.clusterId,
          kind: 'sync',
          options,
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
          details: { operationId: created.id, ...options, reason: req.reason, expiresAt: created.expiresAt },
        },
        tx,
      );
      return created;
    });
    await this.wakeups.notify([target.clusterId]);
    return view(op);
  }

  /** The target a single sync asks for, refused (404, 409) when there is none or it could never run. */
  private async syncableTarget(targetName: string) {
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
        cluster: { select: { name: true, agentVersion: true, agentFeatures: true } },
      },
    });
    if (!target) throw HubError.notFound('target', targetName);
    const why = unsyncable(target);
    if (why) throw new HubError(409, why.code, `target "${targetName}" ${why.reason}: nothing to sync`);
    return target;
  }

  /** The objects a selective sync names, checked against the bundle the target's agent runs. */
  private async declaredRefs(digest: string, namespace: string, refs: ObjectRef[]): Promise<ObjectRef[]> {
    const bundle = await this.db.prisma.bundle.findUnique({ where: { digest }, select: { manifests: true } });
    const manifests = (bundle?.manifests ?? []) as unknown as KubeObject[];
    return declaredRefs(manifests, digest, namespace, refs);
  }

  /**
   * Withdraws a request its agent has not run: it leaves the cluster's assignments at once. An agent
   * that already started it finishes that run (it shows in history); its report then changes nothing
   * here, since only a Pending request is closed by a report.
   */
  async cancel(operationId: string, body: unknown, actor: AuditActor): Promise<TargetOperationView> {
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
  async terminate(operationId: string, body: unknown, actor: AuditActor): Promise<TargetOperationView> {
    const { reason } = parseInput(cancelRequestSchema, body);
    return this.changePending(operationId, actor, reason, {
      verb: 'terminate',
      done: 'terminated',
      action: 'target.sync-terminate-requested',
      refuse: async (current, tx) => {
        if (current.terminateRequestedBy !== null)
          return new HubError(
            409,
            'operation-terminating',
            `operation ${operationId} is being terminated already (asked by ${current.terminateRequestedBy})`,
          );
        const cluster = await tx.cluster.findUniqueOrThrow({
          where: { id: current.clusterId },
          select: { name: true, agentVersion: true, agentFeatures: true },
        });
        const missing = unsupportedBy(cluster, { terminate: true });
        return missing
          ? new HubError(409, 'agent-feature-missing', missing.message, missing.field)
          : undefined;
      },
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
    actor: AuditActor,
    reason: string,
    change: {
      verb: string;
      done: string;
      action: string;
      refuse?: (current: TargetOperation, tx: Prisma.TransactionClient) => Promise<HubError | undefined>;
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
      const refused = await change.refuse?.(current, tx);
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
}
