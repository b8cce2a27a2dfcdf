import { Injectable } from '@nestjs/common';
import type { SyncOperation, TargetOperationView } from '@flotilla/contract';
import { z } from 'zod';
import { AuditLog } from '../audit/audit.service.js';
import { HubError, parseInput } from '../common/hub-error.js';
import { Database } from '../db/database.js';
import { ClusterWakeups } from '../queues/cluster-wakeups.service.js';
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
      // dryRun only when asked, so that every other assignment reads as before (and its ETag stays).
      list.push({ id: r.id, prune, ...(dryRun && { dryRun }), requestedBy: r.requestedBy, reason: r.reason });
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
    requestedBy: r.requestedBy,
    reason: r.reason,
    state: r.state === 'Pending' && r.expiresAt.getTime() <= Date.now() ? 'Expired' : r.state,
    message: r.message,
    createdAt: r.createdAt.toISOString(),
    expiresAt: r.expiresAt.toISOString(),
    finishedAt: r.finishedAt?.toISOString() ?? null,
  };
}
