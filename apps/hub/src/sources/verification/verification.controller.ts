import { Body, Controller, Get, Param, Put, UseGuards } from '@nestjs/common';
import { ApiBearerAuth, ApiTags } from '@nestjs/swagger';
import { Actor } from '../../auth/actor.js';
import { AdminTokenGuard } from '../../auth/admin-token.guard.js';
import { Roles } from '../../auth/roles.decorator.js';
import { parseInput } from '../../common/hub-error.js';
import { repositoryVerificationSchema } from '@flotilla/contract';
import { VerificationSettingsService } from './verification-settings.service.js';

/** A repository's signed-commit requirement: `none`, `head` or `strict`, and the keys allowed to sign. */
@ApiTags('repositories')
@ApiBearerAuth()
@UseGuards(AdminTokenGuard)
@Controller('api/v1/repositories/:id/verification')
export class VerificationController {
  constructor(private readonly settings: VerificationSettingsService) {}

  @Get()
  get(@Param('id') id: string) {
    return this.settings.get(id);
  }

  /** Replaces the mode and both key lists (a list left out is empty); the previous version is kept. */
  @Put()
  @Roles('admin')
  set(@Param('id') id: string, @Body() body: unknown, @Actor() actor: string) {
    return this.settings.set(id, parseInput(repositoryVerificationSchema, body), actor);
  }

  @Get('history')
  history(@Param('id') id: string) {
    return this.settings.history(id);
  }
}
