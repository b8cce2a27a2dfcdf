import { auditCsvHeader, auditCsvRow, type AuditEventView } from '@flotilla/contract';
import { exportLines as recordLines, type ExportFormat } from '../common/record-export.js';

/** Export formats of `GET /api/v1/audit?format=`: one JSON object per line, or CSV with a header row. */
export function exportLines(
  events: AsyncIterable<AuditEventView> | Iterable<AuditEventView>,
  format: ExportFormat,
): AsyncGenerator<string> {
  return recordLines(events, format, { header: auditCsvHeader(), row: auditCsvRow });
}
