import {
  type AuditActor,
  chartRepositoryCredentialsSchema,
  chartRepositoryCredentialsListSchema,
  chartRepositoryCredentialsViewSchema,
} from '@flotilla/contract';
import { Body, Controller, Delete, Get, HttpCode, Param, Put, UseGuards } from '@nestjs/common';
import { ApiBearerAuth, ApiTags } from '@nestjs/swagger';
import { Actor } from '../auth/actor.js';
import { AdminTokenGuard } from '../auth/admin-token.guard.js';
import { parseInput } from '../common/hub-error.js';
import { Roles } from '../auth/roles.decorator.js';
import { ApiAnswer, ApiInput } from '../common/api-docs.js';
import { ChartCredentialsService } from './chart-credentials.service.js';

/** Credentials for Helm repositories and OCI registries. The password is write-only. */
@ApiTags('chart-repositories')
@ApiBearerAuth()
@UseGuards(AdminTokenGuard)
@Controller('api/v1/chart-repositories')
export class ChartCredentialsController {
  constructor(private readonly credentials: ChartCredentialsService) {}

  @Get()
  @Roles('admin')
  @ApiAnswer(chartRepositoryCredentialsListSchema)
  list() {
    return this.credentials.list();
  }

  /** Stores or replaces the credentials for a URL prefix (sealed at rest, never returned). */
  @Put()
  @Roles('admin')
  @ApiInput(chartRepositoryCredentialsSchema, undefined, {
    example: { url: 'oci://registry.example.com/charts', username: 'ci', password: '<token>' },
  })
  @ApiAnswer(chartRepositoryCredentialsViewSchema)
  set(@Body() body: unknown, @Actor() actor: AuditActor) {
    return this.credentials.set(parseInput(chartRepositoryCredentialsSchema, body), actor);
  }

  @Delete(':id')
  @Roles('admin')
  @HttpCode(204)
  async remove(@Param('id') id: string, @Actor() actor: AuditActor) {
    await this.credentials.remove(id, actor);
  }
}
