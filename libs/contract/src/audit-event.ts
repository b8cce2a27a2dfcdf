import { z } from 'zod';
import { apiAnswers } from './api-schemas.js';

/**
 * One audit event as the hub's API returns it (`GET /api/v1/audit`), and its export formats.
 * The hub writes them and the CLI reads or re-exports them, so both use these definitions.
 */
export const auditEventViewSchema = z
  .object({
    id: z.string(),
    at: z.string(),
    actor: z.string(),
    action: z.string(),
    scope: z.string(),
    details: z.unknown(),
    prevHash: z
      .string()
      .nullable()
      .describe("the previous event's hash (64 zeros for the first); null for events older than the chain"),
    hash: z.string().nullable(),
  })
  .register(apiAnswers, { id: 'AuditEventView' });
export type AuditEventView = z.infer<typeof auditEventViewSchema>;

export const AUDIT_CSV_COLUMNS = [
  'id',
  'at',
  'actor',
  'action',
  'scope',
  'details',
  'prevHash',
  'hash',
] as const;

/** RFC 4180: a field with a comma, quote or line break is quoted, and quotes inside are doubled. */
export function csvField(value: string): string {
  return /[",\r\n]/.test(value) ? `"${value.replaceAll('"', '""')}"` : value;
}

/** One CSV record: fields quoted as needed, CRLF-terminated (RFC 4180). */
export function csvLine(cells: readonly string[]): string {
  return `${cells.map(csvField).join(',')}\r\n`;
}

export function auditCsvHeader(): string {
  return csvLine(AUDIT_CSV_COLUMNS);
}

export function auditCsvRow(e: AuditEventView): string {
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
  return csvLine(cells);
}

export function auditNdjsonLine(e: AuditEventView): string {
  return `${JSON.stringify(e)}\n`;
}
