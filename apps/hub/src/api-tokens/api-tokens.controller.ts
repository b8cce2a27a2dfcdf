import {
  type AuditActor,
  createApiTokenSchema,
  apiTokenListingSchema,
  apiTokenViewSchema,
  createdApiTokenSchema,
} from '@flotilla/contract';
import { Body, Controller, Delete, Get, Param, Post, Query } from '@nestjs/common';
import { ApiBearerAuth, ApiTags } from '@nestjs/swagger';
import { Actor } from '../auth/actor.js';
import { parseInput } from '../common/hub-error.js';
import { ApiPageQuery, isPaged, parsePageQuery } from '../common/name-page.js';
import { ApiTokensService } from './api-tokens.service.js';
import { Roles } from '../auth/roles.decorator.js';
import { ApiAnswer, ApiInput } from '../common/api-docs.js';

/** People's API tokens; only admins may see or change them. */
@ApiTags('tokens')
@ApiBearerAuth()
@Roles('admin')
@Controller('api/v1/tokens')
export class ApiTokensController {
  constructor(private readonly tokens: ApiTokensService) {}

  /** Creates a token; the answer's `secret` is the only time it is shown. */
  @Post()
  @ApiInput(createApiTokenSchema, undefined, {
    example: { name: 'ci-deploy', role: 'operator', expiresInDays: 90 },
  })
  @ApiAnswer(createdApiTokenSchema, { status: 201 })
  create(@Body() body: unknown, @Actor() actor: AuditActor) {
    return this.tokens.create(parseInput(createApiTokenSchema, body), actor);
  }

  /** By name; with `limit` or `cursor`, one page `{items, nextCursor}` (see common/name-page.ts). */
  @Get()
  @ApiPageQuery()
  @ApiAnswer(apiTokenListingSchema)
  list(@Query() query: unknown) {
    const q = parsePageQuery(query);
    return isPaged(q) ? this.tokens.page(q) : this.tokens.list();
  }

  @Delete(':name')
  @ApiAnswer(apiTokenViewSchema)
  revoke(@Param('name') name: string, @Actor() actor: AuditActor) {
    return this.tokens.revoke(name, actor);
  }
}
