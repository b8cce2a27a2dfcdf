import type { AuditEventView } from './audit.service.js';

/** Export formats of `GET /api/v1/audit?format=`: one JSON object per line, or CSV with a header row. */

export const CSV_COLUMNS = ['id', 'at', 'actor', 'action', 'scope', 'details', 'prevHash', 'hash'] as const;

/** RFC 4180: a field with a comma, quote or line break is quoted, and quotes inside are doubled. */
export function csvField(value: string): string {
  return /[",\r\n]/.test(value) ? `"${value.replaceAll('"', '""')}"` : value;
}

export function csvHeader(): string {
  return `${CSV_COLUMNS.join(',')}\r\n`;
}

export function csvRow(e: AuditEventView): string {
  const cells = [
    e.id,
    e.at,
    e.actor,
    e.action,
    e.scope,
    JSON.stringify(e.details),
    e.prevHash ?? '',
    e.hash ?? '',
  ];
  return `${cells.map(csvField).join(',')}\r\n`;
}

export function ndjsonLine(e: AuditEventView): string {
  return `${JSON.stringify(e)}\n`;
}

/** The export body, produced as the pages arrive. */
export async function* exportLines(
  events: AsyncIterable<AuditEventView> | Iterable<AuditEventView>,
  format: 'ndjson' | 'csv',
): AsyncGenerator<string> {
  if (format === 'csv') yield csvHeader();
  for await (const e of events) yield format === 'csv' ? csvRow(e) : ndjsonLine(e);
}
