import { Body, Controller, Delete, Get, Param, Post } from '@nestjs/common';
import { ApiBearerAuth, ApiTags } from '@nestjs/swagger';
import { createApiTokenSchema } from '@flotilla/contract';
import { Actor } from '../common/actor.js';
import { parseInput } from '../common/hub-error.js';
import { ApiTokensService } from './api-tokens.service.js';
import { Roles } from './roles.decorator.js';

/** People's API tokens; only admins may see or change them. */
@ApiTags('tokens')
@ApiBearerAuth()
@Roles('admin')
@Controller('api/v1/tokens')
export class ApiTokensController {
  constructor(private readonly tokens: ApiTokensService) {}

  /** Creates a token; the answer's `secret` is the only time it is shown. */
  @Post()
  create(@Body() body: unknown, @Actor() actor: string) {
    return this.tokens.create(parseInput(createApiTokenSchema, body), actor);
  }

  @Get()
  list() {
    return this.tokens.list();
  }

  @Delete(':name')
  revoke(@Param('name') name: string, @Actor() actor: string) {
    return this.tokens.revoke(name, actor);
  }
}
