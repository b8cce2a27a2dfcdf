// The clusters' targets their agents are given, read with one statement, each with the revision it is served.
import type { TargetDeletion } from '@flotilla/contract';
import type { Database } from '../db/database.js';
import { asRecord } from '../common/json.js';
import { assignmentSyncSettingsOf } from '../desired-state/sync-policy.js';

/** One target row as `assignments` reads it: only the columns the answer needs. */
export interface AssignedTargetRow {
  id: string;
  name: string;
  namespace: string;
  syncPolicy: unknown;
  releasedRevision: string | null;
  releasedDigest: string | null;
  appSetId: string;
  appSetName: string;
  project: string;
  appSetUpdatedMs: number;
  hasPin: boolean;
  pinRevision: string | null;
  pinDigest: string | null;
  pinExpiresMs: number | null;
  deletionId: string | null;
  deletionState: string | null;
}

/** A target row with what its agent is served now. */
export type ServedTarget = AssignedTargetRow & { served: { revision: string; bundleDigest: string } };

/** The cluster as assignments read it: its labels, its row's version, and its released or pinned targets. */
export interface AssignedCluster {
  labels: Record<string, string>;
  /** Cluster.updatedAt in ms (0 when the row is gone). */
  updatedMs: number;
  targets: AssignedTargetRow[];
}

/**
 * Two statements, run together, for many clusters at once (the clusters a release woke): their rows
 * and their served targets, only the columns needed. A cluster whose row is gone gets no labels,
 * version 0 and no targets.
 */
export async function readAssignedClusters(
  db: Database,
  clusterIds: readonly string[],
): Promise<Map<string, AssignedCluster>> {
  const ids = [...new Set(clusterIds)];
  const [clusterRows, rows] = await Promise.all([
    db.sql.query<{ id: string; labels: unknown; updatedMs: number }>(
      `SELECT id, labels, (extract(epoch FROM "updatedAt") * 1000)::float8 AS "updatedMs"
         FROM "Cluster" WHERE id = ANY($1::text[])`,
      [ids],
    ),
    // Agents get what is released (or pinned), never straight what Git wants: see rollouts/.
    db.sql.query<AssignedTargetRow & { clusterId: string }>(
      `SELECT t."clusterId", t.id, t.name, t.namespace, t."syncPolicy", t."releasedRevision",
              t."releasedDigest", a.id AS "appSetId", a.name AS "appSetName", a.project,
              (extract(epoch FROM a."updatedAt") * 1000)::float8 AS "appSetUpdatedMs",
              p."targetId" IS NOT NULL AS "hasPin", p.revision AS "pinRevision",
              p."bundleDigest" AS "pinDigest",
              (extract(epoch FROM p."expiresAt") * 1000)::float8 AS "pinExpiresMs",
              t."deletionId", t."deletionState"
         FROM "Target" t
         JOIN "ApplicationSet" a ON a.id = t."appSetId"
         LEFT JOIN "TargetPin" p ON p."targetId" = t.id
        WHERE t."clusterId" = ANY($1::text[])
          AND (t."releasedDigest" IS NOT NULL OR p."targetId" IS NOT NULL)
        ORDER BY t.name`,
      [ids],
    ),
  ]);
  const out = new Map<string, AssignedCluster>();
  for (const id of ids) out.set(id, { labels: {}, updatedMs: 0, targets: [] });
  for (const c of clusterRows)
    out.set(c.id, { labels: asRecord(c.labels), updatedMs: c.updatedMs, targets: [] });
  // Each cluster's targets keep the statement's order (by name), as a read of that cluster alone gives.
  for (const { clusterId, ...target } of rows) out.get(clusterId)?.targets.push(target);
  return out;
}

/** The targets with something to serve `now`, each with what. */
export function servedTargets(rows: readonly AssignedTargetRow[], now: number): ServedTarget[] {
  return rows
    .map((t) => ({ ...t, served: servedRevision(t, now) }))
    .filter((t) => t.served.bundleDigest !== '');
}

/** The soonest expiry of a pin still in force (the answer changes then, without a wake-up); Infinity if none. */
export function nextPinExpiry(rows: readonly AssignedTargetRow[], now: number): number {
  let next = Infinity;
  for (const t of rows)
    if (t.pinExpiresMs !== null && t.pinExpiresMs > now) next = Math.min(next, t.pinExpiresMs);
  return next;
}

/**
 * A target being deleted is no longer synced: its agent gets a tombstone naming the bundle it last
 * served instead. One whose deletion failed gets neither: left as it is until asked again.
 */
export function tombstonesOf(served: readonly ServedTarget[]): TargetDeletion[] {
  return served
    .filter((t) => t.deletionId !== null && t.deletionState === 'Pending')
    .map((t) => {
      const policy = assignmentSyncSettingsOf(t.syncPolicy).syncPolicy.prunePropagationPolicy;
      return {
        id: t.deletionId as string,
        targetId: t.id,
        name: t.name,
        namespace: t.namespace,
        bundleDigest: t.served.bundleDigest,
        ...(policy && { prunePropagationPolicy: policy }),
      };
    });
}

/** A pin (unexpired) wins over the release; a target with neither is not served. */
function servedRevision(
  t: Pick<
    AssignedTargetRow,
    'releasedRevision' | 'releasedDigest' | 'hasPin' | 'pinRevision' | 'pinDigest' | 'pinExpiresMs'
  >,
  now: number,
): { revision: string; bundleDigest: string } {
  if (t.hasPin && (t.pinExpiresMs === null || t.pinExpiresMs > now))
    return { revision: t.pinRevision ?? '', bundleDigest: t.pinDigest ?? '' };
  return { revision: t.releasedRevision ?? '', bundleDigest: t.releasedDigest ?? '' };
}
