import { Controller, Get, Query, UseGuards } from '@nestjs/common';
import { ApiBearerAuth, ApiQuery, ApiTags } from '@nestjs/swagger';
import { z } from 'zod';
import { AdminTokenGuard } from '../common/admin-token.guard.js';
import { parseInput } from '../common/hub-error.js';
import { exportFile } from '../common/record-export.js';
import { exportLines } from './audit-export.js';
import { AuditLog } from './audit.service.js';

const rfc3339 = z.iso.datetime({ offset: true }).transform((s) => new Date(s));

const MAX_EVENT_ID = 9_223_372_036_854_775_807n;

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
    .refine((c) => BigInt(c) <= MAX_EVENT_ID, 'a cursor is the nextCursor of a previous page')
    .optional(),
});

@ApiTags('audit')
@ApiBearerAuth()
@UseGuards(AdminTokenGuard)
@Controller('api/v1/audit')
export class AuditController {
  constructor(private readonly audit: AuditLog) {}

  /**
   * Newest first. `scope` is exact (`appset:web`, `target:web-eu1`), `scopePrefix` and `action` are
   * prefixes (`cluster:`, `sync.`), `from` inclusive and `to` exclusive (RFC 3339). `format=ndjson|csv`
   * streams every match (at most `limit` when given) instead of one page.
   */
  @Get()
  @ApiQuery({ name: 'from', required: false })
  @ApiQuery({ name: 'to', required: false })
  @ApiQuery({ name: 'actor', required: false })
  @ApiQuery({ name: 'scope', required: false })
  @ApiQuery({ name: 'scopePrefix', required: false })
  @ApiQuery({ name: 'action', required: false })
  @ApiQuery({ name: 'outcome', required: false })
  @ApiQuery({ name: 'format', required: false, enum: ['json', 'ndjson', 'csv'] })
  @ApiQuery({ name: 'limit', required: false })
  @ApiQuery({ name: 'cursor', required: false })
  list(@Query() query: unknown) {
    const { format, limit, ...filter } = parseInput(auditQuery, query, 'query');
    if (format === 'json') return this.audit.list({ ...filter, limit: limit ?? 100 });
    const lines = exportLines(
      this.audit.stream({ ...filter, ...(limit !== undefined && { limit }) }),
      format,
    );
    return exportFile(lines, format, 'audit');
  }

  /** Recomputes every hash and link, oldest first; stops at the first break. */
  @Get('verify')
  verify() {
    return this.audit.verify();
  }
}
