import {
  type AuditActor,
  breakGlassListingSchema,
  breakGlassRecordViewSchema,
  breakGlassViewSchema,
} from '@flotilla/contract';
import { Body, Controller, Get, HttpCode, Param, Post, Query, UseGuards } from '@nestjs/common';
import { ApiBearerAuth, ApiQuery, ApiTags } from '@nestjs/swagger';
import { ApiAnswer, ApiInput } from '../common/api-docs.js';
import { Actor } from '../auth/actor.js';
import { AdminTokenGuard } from '../auth/admin-token.guard.js';
import { Roles } from '../auth/roles.decorator.js';
import { parseInput } from '../common/hub-error.js';
import {
  breakGlassIdSchema,
  closeBreakGlassSchema,
  listBreakGlassQuery,
  openBreakGlassSchema,
} from './break-glass-input.js';
import { BreakGlassService } from './break-glass.service.js';
import { ApiPageQuery, isPaged } from '../common/name-page.js';

@ApiTags('break-glass')
@ApiBearerAuth()
@UseGuards(AdminTokenGuard)
@Controller('api/v1/break-glass')
export class BreakGlassController {
  constructor(private readonly breakGlass: BreakGlassService) {}

  /** Opens an override on a cluster, an appset or one target, with a reason and an expiry. */
  @Post()
  @Roles('operator')
  @ApiInput(openBreakGlassSchema, 'OpenBreakGlassRequest', {
    example: {
      scope: 'cluster',
      name: 'prod-eu-1',
      reason: 'INC-4711: hand-patching the ingress',
      durationMinutes: 60,
      pauseSelfHeal: true,
    },
  })
  @ApiAnswer(breakGlassViewSchema, { status: 201 })
  open(@Body() body: unknown, @Actor() actor: AuditActor) {
    return this.breakGlass.open(parseInput(openBreakGlassSchema, body), actor);
  }

  /** Newest first; with `limit` or `cursor`, one page `{items, nextCursor}` (see common/name-page.ts). */
  @Get()
  @ApiQuery({ name: 'state', required: false, enum: ['active', 'closed', 'all'] })
  @ApiPageQuery()
  @ApiAnswer(breakGlassListingSchema)
  list(@Query() query: unknown) {
    const { state, ...q } = parseInput(listBreakGlassQuery, query, 'query');
    return isPaged(q) ? this.breakGlass.page(state, q) : this.breakGlass.list(state);
  }

  @Get(':id')
  @ApiAnswer(breakGlassViewSchema)
  get(@Param('id') id: string) {
    return this.breakGlass.get(parseInput(breakGlassIdSchema, id, 'break-glass id'));
  }

  @Post(':id/close')
  @Roles('operator')
  @HttpCode(200)
  @ApiInput(closeBreakGlassSchema, 'CloseBreakGlassRequest', { required: false })
  @ApiAnswer(breakGlassViewSchema)
  close(@Param('id') id: string, @Body() body: unknown, @Actor() actor: AuditActor) {
    const { reason } = parseInput(closeBreakGlassSchema, body ?? {});
    return this.breakGlass.close(parseInput(breakGlassIdSchema, id, 'break-glass id'), reason, actor);
  }

  /** The post-incident record: every manual change seen under the override. */
  @Get(':id/record')
  @ApiAnswer(breakGlassRecordViewSchema)
  record(@Param('id') id: string) {
    return this.breakGlass.record(parseInput(breakGlassIdSchema, id, 'break-glass id'));
  }
}
