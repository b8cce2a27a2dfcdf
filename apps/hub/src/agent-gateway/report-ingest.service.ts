import { Injectable } from '@nestjs/common';
import type { DriftReport, HealthReport, Report, SyncReport } from '@flotilla/contract';
import { Database } from '../db/database.js';
import { toJson } from '../common/json.js';
import { AuditLog } from '../audit/audit.service.js';
import { HubMetrics } from '../metrics/hub-metrics.service.js';
import { Prisma } from '../generated/prisma/client.js';

type Tx = Prisma.TransactionClient;

/**
 * Agent reports → history, status and audit. Each report is stored under its agent-made id in the
 * same transaction as its effects, so a replay (or two replicas receiving the same batch) is a no-op.
 */
@Injectable()
export class ReportIngestService {
  constructor(
    private readonly db: Database,
    private readonly audit: AuditLog,
    private readonly metrics: HubMetrics,
  ) {}

  async ingestBatch(clusterId: string, reports: Report[]): Promise<{ accepted: number; duplicates: number }> {
    let accepted = 0;
    let duplicates = 0;
    for (const report of reports) {
      const fresh = await this.ingestOne(clusterId, report);
      if (fresh) accepted++;
      else duplicates++;
      this.metrics.reports.inc({ type: report.type, result: fresh ? 'accepted' : 'duplicate' });
    }
    return { accepted, duplicates };
  }

  /** True when the report was new. */
  async ingestOne(clusterId: string, report: Report): Promise<boolean> {
    try {
      return await this.db.prisma.$transaction(async (tx) => {
        const seen = await tx.processedReport.findUnique({ where: { id: report.id }, select: { id: true } });
        if (seen) return false;
        await tx.processedReport.create({
          data: {
            id: report.id,
            clusterId,
            type: report.type,
            targetId: report.targetId,
            payload: toJson(report),
          },
        });
        // A report about a target this cluster does not run (deleted since, or someone else's) is kept
        // for the record but changes nothing.
        const target = await tx.target.findFirst({ where: { id: report.targetId, clusterId } });
        if (!target) return true;
        switch (report.type) {
          case 'sync':
            await this.sync(tx, clusterId, target.id, target.name, report);
            break;
          case 'health':
            await this.health(tx, target.id, target.name, target.health, report);
            break;
          case 'drift':
            await this.drift(tx, target.id, target.name, report);
            break;
        }
        return true;
      });
    } catch (e) {
      // Two replicas stored the same id at the same moment: the other one won, so this is a replay.
      if (e instanceof Prisma.PrismaClientKnownRequestError && e.code === 'P2002') return false;
      throw e;
    }
  }

  private async sync(
    tx: Tx,
    clusterId: string,
    targetId: string,
    targetName: string,
    r: SyncReport,
  ): Promise<void> {
    await tx.syncRun.create({
      data: {
        targetId,
        clusterId,
        revision: r.revision,
        bundleDigest: r.bundleDigest,
        trigger: r.trigger,
        outcome: r.outcome,
        message: r.message,
        startedAt: new Date(r.startedAt),
        finishedAt: new Date(r.finishedAt),
        resources: toJson(r.resources),
        agentReportId: r.id,
      },
    });
    const at = new Date(r.at);
    await tx.target.update({
      where: { id: targetId },
      data:
        r.outcome === 'Succeeded'
          ? {
              lastSyncedRevision: r.revision,
              lastSyncedDigest: r.bundleDigest,
              lastSyncedAt: new Date(r.finishedAt),
              lastReportAt: at,
            }
          : { lastReportAt: at },
    });
    await this.audit.record(
      {
        actor: `agent:${clusterId}`,
        action: `sync.${r.outcome.toLowerCase()}`,
        scope: `target:${targetName}`,
        details: {
          revision: r.revision,
          bundleDigest: r.bundleDigest,
          trigger: r.trigger,
          message: r.message,
          reportId: r.id,
        },
      },
      tx,
    );
  }

  private async health(
    tx: Tx,
    targetId: string,
    targetName: string,
    before: string,
    r: HealthReport,
  ): Promise<void> {
    await tx.target.update({
      where: { id: targetId },
      data: { health: r.status, healthMessage: r.message, lastReportAt: new Date(r.at) },
    });
    if (before !== r.status) {
      await this.audit.record(
        {
          actor: 'agent',
          action: 'health.changed',
          scope: `target:${targetName}`,
          details: { from: before, to: r.status, message: r.message, reportId: r.id },
        },
        tx,
      );
    }
  }

  private async drift(tx: Tx, targetId: string, targetName: string, r: DriftReport): Promise<void> {
    await tx.target.update({ where: { id: targetId }, data: { lastReportAt: new Date(r.at) } });
    await this.audit.record(
      {
        actor: r.manager ? `manager:${r.manager}` : 'agent',
        action: `drift.${r.state}`,
        scope: `target:${targetName}`,
        details: {
          resource: r.resource,
          paths: r.paths,
          breakGlassId: r.breakGlassId ?? null,
          reportId: r.id,
        },
      },
      tx,
    );
  }
}
