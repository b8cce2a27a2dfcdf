import {
  type AuditActor,
  queuedFetchViewSchema,
  repositoryListingSchema,
  repositoryViewSchema,
  writeAccessViewSchema,
} from '@flotilla/contract';
import { Body, Controller, Delete, Get, HttpCode, Param, Post, Put, Query, UseGuards } from '@nestjs/common';
import { ApiBearerAuth, ApiTags } from '@nestjs/swagger';
import { Actor } from '../../auth/actor.js';
import { AdminTokenGuard } from '../../auth/admin-token.guard.js';
import { parseInput } from '../../common/hub-error.js';
import { ApiPageQuery, isPaged, parsePageQuery } from '../../common/name-page.js';
import { Roles } from '../../auth/roles.decorator.js';
import { ApiAnswer, ApiInput } from '../../common/api-docs.js';
import {
  registerRepositorySchema,
  RepositoriesService,
  repositoryCredentialsSchema,
} from './repositories.service.js';
import { writeAccessSchema, WriteAccessService } from './write-access.service.js';

@ApiTags('repositories')
@ApiBearerAuth()
@UseGuards(AdminTokenGuard)
@Controller('api/v1/repositories')
export class RepositoriesController {
  constructor(
    private readonly repos: RepositoriesService,
    private readonly writeAccess: WriteAccessService,
  ) {}

  @Post()
  @Roles('admin') // repositories may carry credentials
  @ApiInput(registerRepositorySchema, 'RegisterRepositoryRequest')
  @ApiAnswer(repositoryViewSchema, { status: 201 })
  async register(@Body() body: unknown, @Actor() actor: AuditActor) {
    const { url, credentials } = parseInput(registerRepositorySchema, body);
    const repo = await this.repos.register(url, actor, credentials);
    return this.repos.get(repo.id);
  }

  /** Stores or replaces the repository's credentials (sealed at rest, never returned), then refetches. */
  @Put(':id/credentials')
  @Roles('admin')
  @ApiInput(repositoryCredentialsSchema, 'RepositoryCredentialsInput')
  @ApiAnswer(repositoryViewSchema)
  async setCredentials(@Param('id') id: string, @Body() body: unknown, @Actor() actor: AuditActor) {
    const credentials = parseInput(repositoryCredentialsSchema, body);
    const view = await this.repos.setCredentials(id, credentials, actor);
    await this.repos.refresh(id);
    return view;
  }

  @Delete(':id/credentials')
  @Roles('admin')
  @ApiAnswer(repositoryViewSchema)
  clearCredentials(@Param('id') id: string, @Actor() actor: AuditActor) {
    return this.repos.clearCredentials(id, actor);
  }

  /**
   * Gives the hub write access, for rollback by revert: a token or deploy key that pushes a branch,
   * and the Git host whose API opens the pull request (sealed at rest, never returned).
   */
  @Put(':id/write-access')
  @Roles('admin')
  @ApiInput(writeAccessSchema, 'WriteAccessInput')
  @ApiAnswer(writeAccessViewSchema)
  setWriteAccess(@Param('id') id: string, @Body() body: unknown, @Actor() actor: AuditActor) {
    return this.writeAccess.set(id, parseInput(writeAccessSchema, body), actor);
  }

  @Get(':id/write-access')
  @ApiAnswer(writeAccessViewSchema)
  getWriteAccess(@Param('id') id: string) {
    return this.writeAccess.get(id);
  }

  @Delete(':id/write-access')
  @Roles('admin')
  @HttpCode(204)
  async clearWriteAccess(@Param('id') id: string, @Actor() actor: AuditActor): Promise<void> {
    await this.writeAccess.clear(id, actor);
  }

  /** By URL; with `limit` or `cursor`, one page `{items, nextCursor}` (see common/name-page.ts). */
  @Get()
  @ApiPageQuery()
  @ApiAnswer(repositoryListingSchema)
  list(@Query() query: unknown) {
    const q = parsePageQuery(query);
    return isPaged(q) ? this.repos.page(q) : this.repos.list();
  }

  @Get(':id')
  @ApiAnswer(repositoryViewSchema)
  get(@Param('id') id: string) {
    return this.repos.get(id);
  }

  /** Queues an immediate fetch. */
  @Post(':id/refresh')
  @Roles('operator')
  @HttpCode(202)
  @ApiAnswer(queuedFetchViewSchema, { status: 202 })
  refresh(@Param('id') id: string) {
    return this.repos.refresh(id);
  }
}
