import {
  type AuditActor,
  fleetOutcomeViewSchema,
  fleetSourceDetailViewSchema,
  fleetSourceListingSchema,
  fleetSourceViewSchema,
} from '@flotilla/contract';
import { Body, Controller, Delete, Get, HttpCode, Param, Post, Query, Res, UseGuards } from '@nestjs/common';
import { ApiBearerAuth, ApiTags } from '@nestjs/swagger';
import { ApiAnswer, ApiInput } from '../common/api-docs.js';
import type { Response } from 'express';
import { Actor } from '../auth/actor.js';
import { AdminTokenGuard } from '../auth/admin-token.guard.js';
import { confirmBody, FleetRepoService, sourceBody } from './fleet-repo.service.js';
import { ApiPageQuery, isPaged, parsePageQuery } from '../common/name-page.js';

@ApiTags('fleet-sources')
@ApiBearerAuth()
@UseGuards(AdminTokenGuard)
@Controller('api/v1/fleet-sources')
export class FleetSourcesController {
  constructor(private readonly fleet: FleetRepoService) {}

  /** Follows a fleet repository `{repoUrl, revision?, path?}`: 201 added, 200 already followed. */
  @Post()
  @ApiInput(sourceBody, 'FleetSourceRequest', {
    example: { repoUrl: 'https://git.example.com/platform/fleet.git', revision: 'main', path: 'fleet' },
  })
  @ApiAnswer(fleetSourceViewSchema, { status: [201, 200] })
  async add(@Body() body: unknown, @Actor() actor: AuditActor, @Res({ passthrough: true }) res: Response) {
    const { created, source } = await this.fleet.add(body, actor);
    res.status(created ? 201 : 200);
    return source;
  }

  /** Oldest first; with `limit` or `cursor`, one page `{items, nextCursor}` in id order (see common/name-page.ts). */
  @Get()
  @ApiPageQuery()
  @ApiAnswer(fleetSourceListingSchema)
  list(@Query() query: unknown) {
    const q = parsePageQuery(query);
    return isPaged(q) ? this.fleet.page(q) : this.fleet.list();
  }

  /** Status (Ready, Error naming file/document/field, Held), the applied commit and author, the objects. */
  @Get(':id')
  @ApiAnswer(fleetSourceDetailViewSchema)
  get(@Param('id') id: string) {
    return this.fleet.get(id);
  }

  /** `{commit, reason}`: applies a commit the deletion guard holds. */
  @Post(':id/confirm')
  @HttpCode(200)
  @ApiInput(confirmBody, 'FleetConfirmRequest')
  @ApiAnswer(fleetOutcomeViewSchema)
  confirm(@Param('id') id: string, @Body() body: unknown, @Actor() actor: AuditActor) {
    return this.fleet.confirm(id, body, actor);
  }

  /** Stops following the source; its objects stay, API-managed from now on (its health rules go). */
  @Delete(':id')
  @HttpCode(204)
  async remove(@Param('id') id: string, @Actor() actor: AuditActor): Promise<void> {
    await this.fleet.remove(id, actor);
  }
}
