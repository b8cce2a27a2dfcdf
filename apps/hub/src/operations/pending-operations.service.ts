// The requested runs a cluster's agent still has to carry out, as its assignments carry them.
import { Injectable } from '@nestjs/common';
import type { SyncOperation } from '@flotilla/contract';
import { Database } from '../db/database.js';
import type { TargetOperation } from '../generated/prisma/client.js';
import { optionsOf } from './run-options.js';

/** Rows still to be carried out: the agent gets these in its assignments. */
const pendingWhere = (now: Date) => ({ state: 'Pending', expiresAt: { gt: now } });

@Injectable()
export class PendingOperations {
  constructor(private readonly db: Database) {}

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
      list.push(syncOperationOf(r));
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

/** One pending row as the agent is given it. */
function syncOperationOf(r: TargetOperation): SyncOperation {
  const { prune, dryRun, revision, resources, syncPolicy } = optionsOf(r);
  // dryRun and terminate only when asked, so that every other assignment reads as before (and its ETag stays).
  return {
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
  };
}
