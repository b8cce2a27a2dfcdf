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
    lane: z
      .number()
      .int()
      .optional()
      .describe(
        "the hash chain (lane) the event belongs to: prevHash is the hash of the lane's event before it",
      ),
  })
  .register(apiAnswers, { id: 'AuditEventView' });
export type AuditEventView = z.infer<typeof auditEventViewSchema>;

/** One page of the audit log (`GET /api/v1/audit`), newest first. */
export const auditPageViewSchema = z
  .object({
    items: z.array(auditEventViewSchema),
    nextCursor: z.string().nullable().describe('pass back as cursor for the next page; null on the last'),
  })
  .register(apiAnswers, { id: 'AuditPageView' });
export type AuditPageView = z.infer<typeof auditPageViewSchema>;

/**
 * Where the hash chain breaks: `hash-mismatch` (the event's content was edited), `broken-link` (a row
 * was deleted or inserted before it), `genesis` (the chain's start was removed), `unchained` (an
 * event without a hash, older than the chain: verification stops there).
 */
export const auditChainBreakViewSchema = z
  .object({
    id: z.string(),
    at: z.string(),
    reason: z.enum(['hash-mismatch', 'broken-link', 'genesis', 'unchained']),
    message: z.string(),
    lane: z.number().int().optional().describe('the chain (lane) that breaks there'),
  })
  .register(apiAnswers, { id: 'AuditChainBreakView' });
export type AuditChainBreakView = z.infer<typeof auditChainBreakViewSchema>;

/** One lane's chain as `GET /api/v1/audit/verify` walked it. */
export const auditLaneVerifyViewSchema = z.object({
  lane: z.number().int(),
  valid: z.boolean(),
  checked: z.number().int().describe('events this call recomputed in the lane'),
  unchained: z.number().int(),
  firstBrokenAt: auditChainBreakViewSchema.optional(),
  // Optional: a hub from before incremental verification leaves them out.
  fromId: z
    .string()
    .nullable()
    .optional()
    .describe(
      'this call started after this event (the stored verified position, or the archive checkpoint); null = at genesis',
    ),
  throughId: z
    .string()
    .nullable()
    .optional()
    .describe("the lane's verified position after this call; null when nothing in it is verified yet"),
  caughtUp: z
    .boolean()
    .optional()
    .describe('false when this call stopped at its row budget: the next one goes on from throughId'),
});

/** The last full verification (every lane from its start), by the chain monitor or `full=true`. */
export const auditFullPassViewSchema = z.object({
  finishedAt: z.string(),
  valid: z.boolean(),
  checked: z.number().int(),
  firstBrokenAt: auditChainBreakViewSchema.optional(),
});
export type AuditFullPassView = z.infer<typeof auditFullPassViewSchema>;

/**
 * The answer of `GET /api/v1/audit/verify`: every lane's chain walked, oldest first — from each lane's
 * verified position (incremental, the default) or from its start (`full=true`); the totals and the
 * earliest break over all lanes, then each lane.
 */
export const auditVerifyViewSchema = z
  .object({
    valid: z
      .boolean()
      .describe('false when this call found a break, or (incremental) when the last full pass did'),
    checked: z.number().int().describe('events this call recomputed, over all lanes'),
    unchained: z
      .number()
      .int()
      .describe('events without a hash met: 0, or 1 in each lane that breaks with reason unchained'),
    firstBrokenAt: auditChainBreakViewSchema.optional(),
    lanes: z.array(auditLaneVerifyViewSchema).optional(),
    mode: z
      .enum(['incremental', 'full'])
      .optional()
      .describe(
        "incremental: only events after each lane's verified position; full: every lane from its start",
      ),
    complete: z
      .boolean()
      .optional()
      .describe('false when some lane stopped at the row budget (caughtUp false): ask again to go on'),
    lastFullPass: auditFullPassViewSchema
      .nullable()
      .optional()
      .describe('the last full pass (the monitor runs one hourly); null when none ran yet'),
  })
  .register(apiAnswers, { id: 'AuditVerifyView' });
export type AuditVerifyView = z.infer<typeof auditVerifyViewSchema>;

/** One lane's stretch of an archive: where it starts and ends, and where that lane's chain goes on. */
export const auditArchiveLaneSchema = z.object({
  lane: z.number().int(),
  throughId: z.string().describe("the lane's last archived event"),
  hash: z
    .string()
    .describe("its hash: the lane's next event's prevHash, and where the lane starts once pruned"),
  events: z.number().int().describe("the lane's events in the archive"),
  previousHash: z
    .string()
    .describe(
      "where the lane's archived stretch starts: its previous checkpoint's hash, or the genesis hash",
    ),
});
export type AuditArchiveLane = z.infer<typeof auditArchiveLaneSchema>;

/**
 * The last line of an audit archive (`GET /api/v1/audit/archive`): what a prune must name, and where
 * verification starts once the archived events are pruned. `lanes` names each chain's stretch; the
 * top-level `throughId`, `hash` and `previousHash` are those of the lane holding the last archived
 * event (with one lane, the whole archive's, as before lanes).
 */
export const auditArchiveCheckpointSchema = z
  .object({
    throughId: z.string().describe('the last archived event'),
    hash: z.string().describe("its hash: the next event's prevHash, and where the chain starts once pruned"),
    events: z.number().int().describe('events in the archive'),
    sha256: z
      .string()
      .describe("sha256 (hex) of the archive's event lines, each with its newline, as exported"),
    previousHash: z
      .string()
      .describe("where the archived stretch starts: the previous checkpoint's hash, or the genesis hash"),
    lanes: z.array(auditArchiveLaneSchema).optional().describe('each lane in the archive, in lane order'),
  })
  .register(apiAnswers, { id: 'AuditArchiveCheckpoint' });
export type AuditArchiveCheckpoint = z.infer<typeof auditArchiveCheckpointSchema>;

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
