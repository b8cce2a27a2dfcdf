import { randomUUID } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import type { BulkSyncView, SyncOperation, TargetOperationView } from '@flotilla/contract';
import { labelSelectorSchema } from '@flotilla/fleet-config';
import { z } from 'zod';
import { AuditLog } from '../audit/audit.service.js';
import { HubError, parseInput } from '../common/hub-error.js';
import { Database } from '../db/database.js';
import { ClusterWakeups } from '../queues/cluster-wakeups.service.js';
import { selectTargets } from './target-selection.js';
import type { TargetOperation } from '../generated/prisma/client.js';

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
    const chosen = await selectTargets(this.db, req);
    const ready = chosen.filter((t) => t.releasedDigest || t.pin);
    const skipped = chosen
      .filter((t) => !t.releasedDigest && !t.pin)
      .map((t) => ({
        target: t.name,
        reason: 'no released revision yet (still rendering, or held by its rollout)',
      }));
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
        'target-not-released',
        `none of the ${chosen.length} matching targets has a released revision yet: nothing to sync`,
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
      options: { prune: req.prune, dryRun: req.dryRun },
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
    const now = new Date();
    const op = await this.db.prisma.$transaction(async (tx) => {
      const current = await tx.targetOperation.findUnique({ where: { id: operationId } });
      if (!current) throw HubError.notFound('operation', operationId);
      const state = view(current).state;
      if (state !== 'Pending')
        throw new HubError(
          409,
          'operation-finished',
          `operation ${operationId} is ${state}: only a Pending one can be cancelled`,
        );
      const updated = await tx.targetOperation.updateMany({
        where: { id: operationId, state: 'Pending' },
        data: { state: 'Cancelled', message: `cancelled by ${actor}: ${reason}`, finishedAt: now },
      });
      // A report closed it between the read and the write.
      if (updated.count === 0)
        throw new HubError(
          409,
          'operation-finished',
          `operation ${operationId} finished meanwhile: nothing to cancel`,
        );
      await this.audit.record(
        {
          actor,
          action: 'target.sync-cancelled',
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

  /**
   * Asks the agent to stop a request it may be running. The request stays in the assignments,
   * marked, until the agent reports: a run going stops at its next safe point (before the next
   * object, or while it waits for a wave or a hook) and is reported Terminated with what it applied;
   * one not started yet is reported Terminated with nothing applied. Either way one report closes it,
   * so it is never left half-recorded. A request already finished answers 409.
   */
  async terminate(operationId: string, body: unknown, actor: string): Promise<TargetOperationView> {
    const { reason } = parseInput(cancelRequestSchema, body);
    const op = await this.db.prisma.$transaction(async (tx) => {
      const current = await tx.targetOperation.findUnique({ where: { id: operationId } });
      if (!current) throw HubError.notFound('operation', operationId);
      const state = view(current).state;
      if (state !== 'Pending')
        throw new HubError(
          409,
          'operation-finished',
          `operation ${operationId} is ${state}: only a Pending one can be terminated`,
        );
      if (current.terminateRequestedBy !== null)
        throw new HubError(
          409,
          'operation-terminating',
          `operation ${operationId} is being terminated already (asked by ${current.terminateRequestedBy})`,
        );
      const updated = await tx.targetOperation.updateMany({
        where: { id: operationId, state: 'Pending', terminateRequestedBy: null },
        data: { terminateRequestedBy: actor, terminateReason: reason, terminateRequestedAt: new Date() },
      });
      if (updated.count === 0)
        throw new HubError(
          409,
          'operation-finished',
          `operation ${operationId} finished meanwhile: nothing to terminate`,
        );
      await this.audit.record(
        {
          actor,
          action: 'target.sync-terminate-requested',
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
    const req = parseInput(syncRequestSchema, body);
    const target = await this.db.prisma.target.findUnique({
      where: { name: targetName },
      select: {
        id: true,
        name: true,
        clusterId: true,
        releasedDigest: true,
        pin: { select: { targetId: true } },
      },
    });
    if (!target) throw HubError.notFound('target', targetName);
    if (!target.releasedDigest && !target.pin)
      throw new HubError(
        409,
        'target-not-released',
        `target "${targetName}" has no released revision yet (still rendering, or held by its rollout): nothing to sync`,
      );
    const now = new Date();
    const op = await this.db.prisma.$transaction(async (tx) => {
      const created = await tx.targetOperation.create({
        data: {
          targetId: target.id,
          targetName: target.name,
          clusterId: target.clusterId,
          kind: 'sync',
          options: { prune: req.prune, dryRun: req.dryRun },
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
      const { prune, dryRun } = optionsOf(r);
      // dryRun and terminate only when asked, so that every other assignment reads as before (and its ETag stays).
      list.push({
        id: r.id,
        prune,
        ...(dryRun && { dryRun }),
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

function optionsOf(r: TargetOperation): { prune: boolean; dryRun: boolean } {
  const o = (r.options ?? {}) as { prune?: unknown; dryRun?: unknown };
  return { prune: o.prune === true, dryRun: o.dryRun === true };
}

function view(r: TargetOperation): TargetOperationView {
  return {
    id: r.id,
    target: r.targetName,
    kind: r.kind,
    ...optionsOf(r),
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
