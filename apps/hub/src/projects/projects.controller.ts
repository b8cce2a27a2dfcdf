import { type AuditActor, projectListingSchema, projectViewSchema } from '@flotilla/contract';
import { ApiPageQuery, isPaged, parsePageQuery } from '../common/name-page.js';

import { Body, Controller, Delete, Get, HttpCode, Param, Post, Query, Res, UseGuards } from '@nestjs/common';

import { ApiBearerAuth, ApiTags } from '@nestjs/swagger';
import { projectObjectSchema } from '@flotilla/fleet-config';

import type { Response } from 'express';
import { Actor } from '../auth/actor.js';

import { AdminTokenGuard } from '../auth/admin-token.guard.js';

import { ProjectsService } from './projects.service.js';
import { ApiAnswer, ApiInput } from '../common/api-docs.js';

@ApiTags('projects')
@ApiBearerAuth()
@UseGuards(AdminTokenGuard)
@Controller('api/v1/projects')
export class ProjectsController {
  constructor(private readonly projects: ProjectsService) {}

  /** Creates or replaces a Project (flotilla.dev/v1alpha1): 201 created, 200 replaced, 409 if Git-managed. */
  @Post()
  @ApiInput(projectObjectSchema, 'ProjectDocument')
  @ApiAnswer(projectViewSchema, { status: [201, 200] })
  async apply(@Body() body: unknown, @Actor() actor: AuditActor, @Res({ passthrough: true }) res: Response) {
    const { created, project } = await this.projects.apply(body, actor);
    res.status(created ? 201 : 200);
    return project;
  }

  /** By name; with `limit` or `cursor`, one page `{items, nextCursor}` (see common/name-page.ts). */
  @Get()
  @ApiPageQuery()
  @ApiAnswer(projectListingSchema)
  list(@Query() query: unknown) {
    const q = parsePageQuery(query);
    return isPaged(q) ? this.projects.page(q) : this.projects.list();
  }

  @Get(':name')
  @ApiAnswer(projectViewSchema)
  get(@Param('name') name: string) {
    return this.projects.get(name);
  }

  @Delete(':name')
  @HttpCode(204)
  async remove(@Param('name') name: string, @Actor() actor: AuditActor): Promise<void> {
    await this.projects.remove(name, actor);
  }
}
