import { auditCsvHeader, auditCsvRow, auditNdjsonLine, type AuditEventView } from '@flotilla/contract';

/** Export formats of `GET /api/v1/audit?format=`: one JSON object per line, or CSV with a header row. */

/** The export body, produced as the pages arrive. */
export async function* exportLines(
  events: AsyncIterable<AuditEventView> | Iterable<AuditEventView>,
  format: 'ndjson' | 'csv',
): AsyncGenerator<string> {
  if (format === 'csv') yield auditCsvHeader();
  for await (const e of events) yield format === 'csv' ? auditCsvRow(e) : auditNdjsonLine(e);
}
