// The requested runs a cluster's agent still has to carry out, as its assignments carry them.
import { Injectable } from '@nestjs/common';
import type { SyncOperation } from '@flotilla/contract';
import { Database } from '../db/database.js';
import type { TargetOperation } from '../generated/prisma/client.js';
import { optionsOf } from './run-options.js';

/** Rows still to be carried out: the agent gets these in its assignments. */
const pendingWhere = (now: Date) => ({ state: 'Pending', expiresAt: { gt: now } });

/** Pending operations an assignment carries per cluster at most (oldest first). */
const PER_CLUSTER = 1000;

/** A cluster's pending operations, as its assignments carry them. */
export interface ClusterOperations {
  /** The operations each target still has to run, oldest first, by target id. */
  byTarget: Map<string, SyncOperation[]>;
  /** The soonest expiry among them (the assignments change then, without a wake-up). */
  nextExpiry: number | undefined;
}

@Injectable()
export class PendingOperations {
  constructor(private readonly db: Database) {}

  /**
   * The pending operations of each of these clusters, in one statement for all of them (the
   * clusters a release woke together). Only when some cluster has more than PER_CLUSTER does each
   * cluster get a read of its own, so every cluster's answer is what a read of it alone gives.
   */
  async pendingForClusters(
    clusterIds: readonly string[],
    now = new Date(),
  ): Promise<Map<string, ClusterOperations>> {
    const ids = [...new Set(clusterIds)];
    const cap = PER_CLUSTER * ids.length;
    const rows = await this.db.prisma.targetOperation.findMany({
      where: { clusterId: { in: ids }, ...pendingWhere(now) },
      orderBy: { createdAt: 'asc' },
      take: cap + 1,
    });
    if (rows.length > cap) {
      const each = await Promise.all(ids.map((id) => this.pendingOfOne(id, now)));
      return new Map(ids.map((id, i) => [id, each[i] as ClusterOperations]));
    }
    const rowsOf = new Map<string, TargetOperation[]>(ids.map((id) => [id, []]));
    for (const r of rows) rowsOf.get(r.clusterId)?.push(r);
    return new Map(ids.map((id) => [id, operationsOf(rowsOf.get(id) ?? [], undefined)]));
  }

  /** One cluster's, when it has more than PER_CLUSTER: the oldest of them, and the soonest expiry of all. */
  private async pendingOfOne(clusterId: string, now: Date): Promise<ClusterOperations> {
    const [rows, next] = await Promise.all([
      this.db.prisma.targetOperation.findMany({
        where: { clusterId, ...pendingWhere(now) },
        orderBy: { createdAt: 'asc' },
        take: PER_CLUSTER,
      }),
      this.db.prisma.targetOperation.findFirst({
        where: { clusterId, ...pendingWhere(now) },
        orderBy: { expiresAt: 'asc' },
        select: { expiresAt: true },
      }),
    ]);
    return operationsOf(rows, next?.expiresAt.getTime());
  }
}

/**
 * One cluster's pending rows (oldest first) by target; the soonest expiry is theirs unless given
 * (when they are not all of the cluster's).
 */
function operationsOf(rows: readonly TargetOperation[], nextExpiry: number | undefined): ClusterOperations {
  const byTarget = new Map<string, SyncOperation[]>();
  let soonest = nextExpiry;
  for (const r of rows.slice(0, PER_CLUSTER)) {
    const list = byTarget.get(r.targetId) ?? [];
    list.push(syncOperationOf(r));
    byTarget.set(r.targetId, list);
  }
  if (nextExpiry === undefined)
    for (const r of rows) soonest = Math.min(soonest ?? Infinity, r.expiresAt.getTime());
  return { byTarget, nextExpiry: soonest };
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
