import { Controller, Get, Query, UseGuards } from '@nestjs/common';
import { ApiBearerAuth, ApiQuery, ApiTags } from '@nestjs/swagger';
import { z } from 'zod';
import { AdminTokenGuard } from '../common/admin-token.guard.js';
import { parseInput } from '../common/hub-error.js';
import { AuditLog } from './audit.service.js';

const auditQuery = z.object({
  scope: z.string().optional(),
  action: z.string().optional(),
  limit: z.coerce.number().int().min(1).max(500).default(100),
  cursor: z.string().regex(/^\d+$/, 'a cursor is the nextCursor of a previous page').optional(),
});

@ApiTags('audit')
@ApiBearerAuth()
@UseGuards(AdminTokenGuard)
@Controller('api/v1/audit')
export class AuditController {
  constructor(private readonly audit: AuditLog) {}

  /** Newest first. `scope` is exact (`appset:web`, `target:web-eu1`); `action` is a prefix (`sync.`). */
  @Get()
  @ApiQuery({ name: 'scope', required: false })
  @ApiQuery({ name: 'action', required: false })
  @ApiQuery({ name: 'limit', required: false })
  @ApiQuery({ name: 'cursor', required: false })
  list(@Query() query: unknown) {
    return this.audit.list(parseInput(auditQuery, query, 'query'));
  }
}
