import {
  type AuditActor,
  type DeletionReport,
  type TargetDeletionView,
  systemActor,
} from '@flotilla/contract';
import { randomUUID } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import { z } from 'zod';
import { AuditLog, type AuditEntry } from '../audit/audit.service.js';
import { HubError, parseInput } from '../common/hub-error.js';
import { Database } from '../db/database.js';
import type { Prisma } from '../generated/prisma/client.js';
import { ClusterWakeups } from '../wakeups/cluster-wakeups.service.js';
import { deletesResourcesOnDeletion } from './deletion-guard.js';

export const deleteRequestSchema = z.strictObject({
  cascade: z.literal(true, {
    error:
      'cascade must be true: the target is deleted with its objects. To leave them in the cluster, remove the target from its appset (orphaned, as Flotilla does by default)',
  }),
  reason: z.string().trim().min(1, 'say why (it goes to the audit log)').max(1000),
});

type Tx = Prisma.TransactionClient;

/**
 * Targets deleted with their objects because a person asked (`POST targets/:name/delete`). The row
 * stays, marked with a deletion id, until the target's agent reports the deletion done: meanwhile its
 * assignment is replaced by a tombstone (agent-gateway), and the target is neither synced nor
 * released. Done, the row goes (history stays: sync runs and audit copy names); failed, the row stays
 * with the message, no longer assigned nor deleted, until a person asks again.
 */
@Injectable()
export class TargetDeletions {
  constructor(
    private readonly db: Database,
    private readonly audit: AuditLog,
    private readonly wakeups: ClusterWakeups,
  ) {}

  async request(targetName: string, body: unknown, actor: AuditActor): Promise<TargetDeletionView> {
    const req = parseInput(deleteRequestSchema, body);
    const now = new Date();
    const deletionId = randomUUID();
    const result = await this.db.prisma.$transaction(async (tx) => {
      const [target] = await tx.$queryRaw<
        { id: string; name: string; clusterId: string; served: boolean; deletionState: string | null }[]
      >`
        SELECT t."id", t."name", t."clusterId", t."deletionState",
               (t."releasedDigest" IS NOT NULL OR p."targetId" IS NOT NULL) AS "served"
          FROM "Target" t LEFT JOIN "TargetPin" p ON p."targetId" = t."id"
         WHERE t."name" = ${targetName}
           FOR UPDATE OF t`;
      if (!target) throw HubError.notFound('target', targetName);
      if (target.deletionState === 'Pending')
        throw new HubError(
          409,
          'deletion-pending',
          `target "${targetName}" is already being deleted; its agent has not reported yet`,
        );
      const details = { deletionId, cascade: true, reason: req.reason };
      await this.audit.record(
        { actor, action: 'target.deletion-requested', scope: `target:${target.name}`, details },
        tx,
      );
      if (!target.served) {
        // No agent was ever given anything of it: nothing can be in a cluster, so it goes at once.
        await tx.target.delete({ where: { id: target.id } });
        await this.audit.record(
          {
            actor,
            action: 'target.deleted',
            scope: `target:${target.name}`,
            details: { deletionId, message: 'never released to its cluster: nothing to delete there' },
          },
          tx,
        );
        return { target, state: 'Deleted' as const };
      }
      await tx.target.update({
        where: { id: target.id },
        data: {
          deletionId,
          deletionBy: actor,
          deletionReason: req.reason,
          deletionAt: now,
          deletionState: 'Pending',
          deletionMessage: '',
        },
      });
      return { target, state: 'Pending' as const };
    });
    await this.wakeups.notify([result.target.clusterId]);
    return {
      target: result.target.name,
      deletionId,
      state: result.state,
      requestedBy: actor,
      reason: req.reason,
      requestedAt: now.toISOString(),
      message: '',
    };
  }
}

/**
 * Marks targets an expansion removes as deleting with their objects (the appset carries Argo CD's
 * resources finalizer), audited as `target.deletion-requested` by the hub with the appset named.
 * Only targets an agent was given something of: the rest hold nothing in a cluster and are returned
 * for the expansion to delete as usual. Runs in the expansion's transaction.
 */
export async function requestExpansionDeletions(
  tx: Tx,
  appSetName: string,
  targets: readonly { id: string; name: string }[],
  reason = `removed from appset ${appSetName}, whose template carries the resources finalizer`,
): Promise<{ marked: { id: string; name: string; clusterId: string }[]; audit: AuditEntry[] }> {
  if (targets.length === 0) return { marked: [], audit: [] };
  const marked = await tx.$queryRaw<{ id: string; name: string; clusterId: string; deletionId: string }[]>`
    UPDATE "Target" t
       SET "deletionId" = gen_random_uuid()::text, "deletionBy" = 'system:expansion', "deletionReason" = ${reason},
           "deletionAt" = now(), "deletionState" = 'Pending', "deletionMessage" = ''
     WHERE t."id" = ANY(${targets.map((t) => t.id)}::text[]) AND t."deletionId" IS NULL
       AND (t."releasedDigest" IS NOT NULL OR EXISTS (SELECT 1 FROM "TargetPin" p WHERE p."targetId" = t."id"))
    RETURNING t."id", t."name", t."clusterId", t."deletionId"`;
  return {
    marked,
    audit: marked.map((t) => ({
      actor: systemActor('expansion'),
      action: 'target.deletion-requested',
      scope: `target:${t.name}`,
      details: { deletionId: t.deletionId, cascade: true, appSet: appSetName, reason },
    })),
  };
}

/**
 * Deletes an appset — or, when its template carries the resources finalizer and agents hold some of
 * its targets, marks it `Deleting`: those targets get tombstones, the rest go now, and the appset row
 * goes with its last target (applyDeletionReports), as Argo CD's finalizer keeps an Application until
 * its resources are gone. Returns the clusters to wake and whether the row stays for now.
 */
export async function removeAppSet(
  tx: Tx,
  appSet: { id: string; name: string; spec: unknown },
): Promise<{ clusterIds: string[]; deferred: boolean; audit: AuditEntry[] }> {
  const targets = await tx.target.findMany({
    where: { appSetId: appSet.id },
    select: { id: true, name: true, clusterId: true, deletionId: true },
  });
  const clusterIds = [...new Set(targets.map((t) => t.clusterId))];
  if (deletesResourcesOnDeletion(appSet.spec)) {
    const { marked, audit } = await requestExpansionDeletions(
      tx,
      appSet.name,
      targets.filter((t) => t.deletionId === null),
      `appset ${appSet.name} deleted; its template carries the resources finalizer`,
    );
    const keep = new Set([
      ...marked.map((t) => t.id),
      ...targets.filter((t) => t.deletionId).map((t) => t.id),
    ]);
    if (keep.size > 0) {
      await tx.target.deleteMany({ where: { appSetId: appSet.id, id: { notIn: [...keep] } } });
      await tx.applicationSet.update({ where: { id: appSet.id }, data: { status: 'Deleting' } });
      return { clusterIds, deferred: true, audit };
    }
  }
  await tx.applicationSet.delete({ where: { id: appSet.id } });
  return { clusterIds, deferred: false, audit: [] };
}

/**
 * Applies deletion reports (report ingest, inside its transaction): only a Pending deletion of the
 * reporting cluster's own target, with the tombstone's id, moves — so a replayed, stale or forged
 * report changes nothing, and one naming another cluster's target never gets here (it is audited
 * as agent.access-denied). Succeeded deletes the target row; Failed keeps it with the message.
 */
export async function applyDeletionReports(
  tx: Tx,
  actor: AuditActor,
  reports: { report: DeletionReport; target: { id: string; name: string; appSetId: string } }[],
): Promise<{ audit: AuditEntry[]; deleted: string[]; expand: { appSetId: string; deletionId: string }[] }> {
  const audit: AuditEntry[] = [];
  const deleted: string[] = [];
  const expand: { appSetId: string; deletionId: string }[] = [];
  for (const { report, target } of reports) {
    const summary = summarize(report);
    const [row] = await tx.$queryRaw<{ deletionBy: string | null; deletionReason: string | null }[]>`
      SELECT "deletionBy", "deletionReason" FROM "Target"
       WHERE "id" = ${target.id} AND "deletionId" = ${report.deletionId} AND "deletionState" = 'Pending'`;
    if (!row) {
      audit.push({
        actor,
        action: 'target.deletion-report-ignored',
        scope: `target:${target.name}`,
        details: {
          deletionId: report.deletionId,
          reportId: report.id,
          outcome: report.outcome,
          why: 'no pending deletion of this target has that id',
        },
      });
      continue;
    }
    const details = {
      deletionId: report.deletionId,
      requestedBy: row.deletionBy,
      reason: row.deletionReason,
      message: report.message,
      ...summary,
    };
    if (report.outcome === 'Succeeded') {
      await tx.$executeRaw`DELETE FROM "Target" WHERE "id" = ${target.id}`;
      deleted.push(target.id);
      audit.push({ actor, action: 'target.deleted', scope: `target:${target.name}`, details });
      // An appset deleted with the resources finalizer goes with its last target.
      const [gone] = await tx.$queryRaw<{ name: string }[]>`
        DELETE FROM "ApplicationSet" a
         WHERE a."id" = ${target.appSetId} AND a."status" = 'Deleting'
           AND NOT EXISTS (SELECT 1 FROM "Target" t WHERE t."appSetId" = a."id")
        RETURNING a."name"`;
      if (gone)
        audit.push({
          actor,
          action: 'appset.deleted',
          scope: `appset:${gone.name}`,
          details: { afterTargetsDeleted: true },
        });
      // Git may have asked for the target again while it was being deleted (an expansion leaves a
      // target being deleted alone): its appset is expanded once more, which recreates it if so.
      else if (
        await tx.applicationSet.findFirst({
          where: { id: target.appSetId, status: { not: 'Deleting' } },
          select: { id: true },
        })
      )
        expand.push({ appSetId: target.appSetId, deletionId: report.deletionId });
    } else {
      await tx.$executeRaw`
        UPDATE "Target" SET "deletionState" = 'Failed', "deletionMessage" = ${report.message.slice(0, 2000)}
         WHERE "id" = ${target.id}`;
      audit.push({ actor, action: 'target.deletion-failed', scope: `target:${target.name}`, details });
    }
  }
  return { audit, deleted, expand };
}

/** What the audit keeps of a deletion's objects: the names of those deleted, kept and failed. */
function summarize(report: DeletionReport): { deleted: string[]; kept: string[]; failed: string[] } {
  const name = (r: DeletionReport['resources'][number]): string =>
    `${r.kind}/${r.namespace ? `${r.namespace}/` : ''}${r.name}`;
  const pick = (action: string) =>
    report.resources.filter((r) => !r.hookPhase && r.action === action).map(name);
  return {
    deleted: pick('deleted'),
    kept: pick('kept'),
    failed: report.resources.filter((r) => r.action === 'failed').map(name),
  };
}
