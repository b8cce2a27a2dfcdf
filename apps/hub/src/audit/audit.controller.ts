import {
  type AuditActor,
  auditEventViewSchema,
  auditPageViewSchema,
  auditPruneViewSchema,
  auditVerifyViewSchema,
  type AuditVerifyView,
} from '@flotilla/contract';
import { Readable } from 'node:stream';
import { Body, Controller, Get, HttpCode, Post, Query, Req, StreamableFile, UseGuards } from '@nestjs/common';
import { ApiBearerAuth, ApiQuery, ApiTags } from '@nestjs/swagger';
import { z } from 'zod';
import { Roles } from '../auth/roles.decorator.js';
import { Actor } from '../auth/actor.js';
import { AdminTokenGuard } from '../auth/admin-token.guard.js';
import { HubError, parseInput } from '../common/hub-error.js';
import type { PeopleRequest } from '../auth/principal.js';
import { roleAllows } from '../auth/role-policy.js';
import { exportFile } from '../common/record-export.js';
import { exportLines } from './audit-export.js';
import { AuditArchive } from './audit-archive.service.js';
import { AuditLog } from './audit.service.js';
import { MAX_AUDIT_CHAIN_LANES } from '../config/audit-env.js';
import { ApiAnswer, ApiInput, ApiQueryOf } from '../common/api-docs.js';

const rfc3339 = z.iso.datetime({ offset: true }).transform((s) => new Date(s));

const MAX_EVENT_ID = 9_223_372_036_854_775_807n;

/**
 * Digits within PostgreSQL's bigint. Tested here again: zod runs a refinement even after the regex
 * before it failed, and BigInt() of anything else throws (a 500 instead of a 400).
 */
const isEventId = (c: string) => /^\d+$/.test(c) && BigInt(c) <= MAX_EVENT_ID;

const auditQuery = z.object({
  from: rfc3339.optional(),
  to: rfc3339.optional(),
  actor: z.string().min(1).optional(),
  scope: z.string().min(1).optional(),
  scopePrefix: z.string().min(1).optional(),
  action: z.string().min(1).optional(),
  outcome: z.string().min(1).optional(),
  format: z.enum(['json', 'ndjson', 'csv']).default('json'),
  limit: z.coerce.number().int().min(1).max(500).optional(),
  cursor: z
    .string()
    .regex(/^\d+$/, 'a cursor is the nextCursor of a previous page')
    // An event id is a PostgreSQL bigint: a larger number is no cursor the hub gave (and would fail the query).
    .refine(isEventId, 'a cursor is the nextCursor of a previous page')
    .optional(),
});

const archiveQuery = z.object({ before: rfc3339 });

const verifyQuery = z.object({
  full: z
    .enum(['true', 'false'], "expected 'true' or 'false'")
    .optional()
    .transform((v) => v === 'true'),
});

const hex64 = z
  .string()
  .regex(/^[0-9a-f]{64}$/, 'expected 64 lowercase hex digits, as in the checkpoint line');
const eventId = z
  .string()
  .regex(/^\d+$/, "expected the checkpoint line's throughId (digits)")
  .refine(isEventId, "expected the checkpoint line's throughId");
const pruneBody = z.object({
  throughId: eventId,
  hash: hex64,
  sha256: hex64,
  /** The checkpoint line's `lanes`, as exported; left out, the cut is lane 0's (an archive from before lanes). */
  lanes: z
    .array(
      z.object({ lane: z.number().int().min(0).max(MAX_AUDIT_CHAIN_LANES), throughId: eventId, hash: hex64 }),
    )
    .min(1)
    .refine((lanes) => new Set(lanes.map((l) => l.lane)).size === lanes.length, 'each lane at most once')
    .optional(),
});

@ApiTags('audit')
@ApiBearerAuth()
@UseGuards(AdminTokenGuard)
@Controller('api/v1/audit')
export class AuditController {
  constructor(
    private readonly audit: AuditLog,
    private readonly archive: AuditArchive,
  ) {}

  /**
   * Newest first. `scope` is exact (`appset:web`, `target:web-eu1`), `scopePrefix` and `action` are
   * prefixes (`cluster:`, `sync.`), `from` inclusive and `to` exclusive (RFC 3339). `format=ndjson|csv`
   * streams every match (at most `limit` when given) instead of one page.
   */
  @Get()
  @ApiQueryOf(auditQuery)
  @ApiAnswer(auditPageViewSchema, {
    description: 'format=json (the default); ndjson and csv stream the events',
  })
  list(@Query() query: unknown) {
    const { format, limit, ...filter } = parseInput(auditQuery, query, 'query');
    if (format === 'json') return this.audit.list({ ...filter, limit: limit ?? 100 });
    const lines = exportLines(
      this.audit.stream({ ...filter, ...(limit !== undefined && { limit }) }),
      format,
    );
    return exportFile(lines, format, 'audit');
  }

  /**
   * The archive of every event written before `before` not archived yet: NDJSON, oldest first, one
   * event a line (as the ndjson export) lane by lane, then `{"checkpoint": {throughId, hash, events,
   * sha256, previousHash, lanes}}` — or `{"broken": {...}}` when the chain does not verify. Changes nothing: keep
   * the file, then POST /api/v1/audit/prune with its checkpoint.
   */
  @Get('archive')
  @Roles('admin')
  @ApiQuery({ name: 'before', required: true, description: 'RFC 3339: archive the events written before' })
  @ApiAnswer(auditEventViewSchema, {
    type: 'application/x-ndjson',
    description: 'one event a line, oldest first, then {"checkpoint": {…}} (or {"broken": {…}})',
  })
  async exportArchive(@Query() query: unknown) {
    const { before } = parseInput(archiveQuery, query, 'query');
    const range = await this.archive.range(before);
    return new StreamableFile(Readable.from(this.archive.lines(range)), {
      type: 'application/x-ndjson',
      disposition: `attachment; filename="audit-archive-through-${range.throughId}.ndjson"`,
    });
  }

  /**
   * Deletes the events of an archive: only if they are exactly what the hub holds (same range from
   * the chain's start, still verifying, same last hash and sha256). Verification then starts at the
   * checkpoint. Audited (`audit.pruned`).
   */
  @Post('prune')
  @Roles('admin')
  @HttpCode(200)
  @ApiInput(pruneBody, 'AuditPruneRequest')
  @ApiAnswer(auditPruneViewSchema)
  prune(@Body() body: unknown, @Actor() actor: AuditActor) {
    return this.archive.prune(parseInput(pruneBody, body), actor);
  }

  /**
   * Recomputes the hashes and links of the events after each lane's verified position (bounded,
   * any viewer), or with `full=true` every lane from its archive checkpoint — admin only, as it
   * rereads the whole log. Stops each lane at its first break.
   */
  @Get('verify')
  @ApiQueryOf(verifyQuery)
  @ApiAnswer(auditVerifyViewSchema)
  verify(@Query() query: unknown, @Req() req: PeopleRequest): Promise<AuditVerifyView> {
    const { full } = parseInput(verifyQuery, query, 'query');
    const principal = req.principal;
    if (full && (!principal || !roleAllows(principal.role, 'admin'))) {
      throw new HubError(
        403,
        'forbidden',
        `full=true rereads every audit event and needs the admin role; ${principal?.actor ?? 'the caller'} has ${principal?.role ?? 'none'} (without it, verify checks the events since the last verified position)`,
        'full',
      );
    }
    return this.audit.verify({ full });
  }
}
