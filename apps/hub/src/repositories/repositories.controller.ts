import { Body, Controller, Get, HttpCode, Param, Post, UseGuards } from '@nestjs/common';
import { ApiBearerAuth, ApiTags } from '@nestjs/swagger';
import { Actor } from '../common/actor.js';
import { AdminTokenGuard } from '../common/admin-token.guard.js';
import { parseInput } from '../common/hub-error.js';
import { Roles } from '../auth/roles.decorator.js';
import { registerRepositorySchema, RepositoriesService } from './repositories.service.js';

@ApiTags('repositories')
@ApiBearerAuth()
@UseGuards(AdminTokenGuard)
@Controller('api/v1/repositories')
export class RepositoriesController {
  constructor(private readonly repos: RepositoriesService) {}

  @Post()
  @Roles('admin') // repositories may carry credentials
  async register(@Body() body: unknown, @Actor() actor: string) {
    const { url } = parseInput(registerRepositorySchema, body);
    const repo = await this.repos.register(url, actor);
    return this.repos.get(repo.id);
  }

  @Get()
  list() {
    return this.repos.list();
  }

  @Get(':id')
  get(@Param('id') id: string) {
    return this.repos.get(id);
  }

  /** Queues an immediate fetch. */
  @Post(':id/refresh')
  @Roles('operator')
  @HttpCode(202)
  refresh(@Param('id') id: string) {
    return this.repos.refresh(id);
  }
}
