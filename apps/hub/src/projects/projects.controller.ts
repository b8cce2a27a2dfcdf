import { Body, Controller, Delete, Get, HttpCode, Param, Post, Res, UseGuards } from '@nestjs/common';
import { ApiBearerAuth, ApiBody, ApiTags } from '@nestjs/swagger';
import type { Response } from 'express';
import { Actor } from '../common/actor.js';
import { AdminTokenGuard } from '../common/admin-token.guard.js';
import { ProjectsService } from './projects.service.js';

@ApiTags('projects')
@ApiBearerAuth()
@UseGuards(AdminTokenGuard)
@Controller('api/v1/projects')
export class ProjectsController {
  constructor(private readonly projects: ProjectsService) {}

  /** Creates or replaces a Project (flotilla.dev/v1alpha1): 201 created, 200 replaced, 409 if Git-managed. */
  @Post()
  @ApiBody({ description: 'A Project document (kind: Project, apiVersion: flotilla.dev/v1alpha1)' })
  async apply(@Body() body: unknown, @Actor() actor: string, @Res({ passthrough: true }) res: Response) {
    const { created, project } = await this.projects.apply(body, actor);
    res.status(created ? 201 : 200);
    return project;
  }

  @Get()
  list() {
    return this.projects.list();
  }

  @Get(':name')
  get(@Param('name') name: string) {
    return this.projects.get(name);
  }

  @Delete(':name')
  @HttpCode(204)
  async remove(@Param('name') name: string, @Actor() actor: string): Promise<void> {
    await this.projects.remove(name, actor);
  }
}
