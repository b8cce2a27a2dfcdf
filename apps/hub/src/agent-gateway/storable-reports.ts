import {
  findUnstorableText,
  storable,
  unstorableTextMessage,
  type Report,
  type ReportBatchResponse,
} from '@flotilla/contract';
import type { AuditEntry } from '../audit/audit.service.js';

export type RefusedReport = NonNullable<ReportBatchResponse['refused']>[number];

/**
 * A batch split into the reports PostgreSQL can store and those carrying text it cannot (a NUL, a
 * lone surrogate: a resource's message, a name from the cluster). One such report used to fail the
 * whole batch with a 500, so the agent resent it forever and nothing of its cluster got through.
 */
export function partitionStorable(reports: Report[]): { storable: Report[]; refused: RefusedReport[] } {
  const kept: Report[] = [];
  const refused: RefusedReport[] = [];
  reports.forEach((report, index) => {
    const found = findUnstorableText(report, ['reports', index]);
    if (!found) kept.push(report);
    else
      refused.push({
        index,
        id: storable(report.id),
        code: 'invalid-text',
        message: `report ${index} refused: ${unstorableTextMessage(found)}`,
      });
  });
  return { storable: kept, refused };
}

/** An `agent.report-refused` audit event per refused report, in the agent's name. */
export function refusedReportEvents(clusterName: string, refused: RefusedReport[]): AuditEntry[] {
  return refused.map((r) => ({
    actor: `agent:${clusterName}`,
    action: 'agent.report-refused',
    scope: `cluster:${clusterName}`,
    details: { reportId: r.id, index: r.index, code: r.code, message: r.message },
  }));
}
