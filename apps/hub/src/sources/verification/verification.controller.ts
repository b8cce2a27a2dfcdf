import { Body, Controller, Get, Param, Put, UseGuards } from '@nestjs/common';
import { ApiBearerAuth, ApiTags } from '@nestjs/swagger';
import { Actor } from '../../auth/actor.js';
import { AdminTokenGuard } from '../../auth/admin-token.guard.js';
import { Roles } from '../../auth/roles.decorator.js';
import { parseInput } from '../../common/hub-error.js';
import {
  type AuditActor,
  repositoryVerificationHistorySchema,
  repositoryVerificationSchema,
  repositoryVerificationViewSchema,
} from '@flotilla/contract';
import { ApiAnswer, ApiInput } from '../../common/api-docs.js';
import { VerificationSettingsService } from './verification-settings.service.js';

/** A repository's signed-commit requirement: `none`, `head` or `strict`, and the keys allowed to sign. */
@ApiTags('repositories')
@ApiBearerAuth()
@UseGuards(AdminTokenGuard)
@Controller('api/v1/repositories/:id/verification')
export class VerificationController {
  constructor(private readonly settings: VerificationSettingsService) {}

  @Get()
  @ApiAnswer(repositoryVerificationViewSchema)
  get(@Param('id') id: string) {
    return this.settings.get(id);
  }

  /** Replaces the mode and both key lists (a list left out is empty); the previous version is kept. */
  @Put()
  @Roles('admin')
  @ApiInput(repositoryVerificationSchema, undefined, {
    example: {
      mode: 'head',
      allowedSigners:
        'ci@example.com ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIO1nNqYQ0lq5VyZ8M7dJb6Oy5cM8GdrAAhKmb2xBl6Ed',
    },
  })
  @ApiAnswer(repositoryVerificationViewSchema)
  set(@Param('id') id: string, @Body() body: unknown, @Actor() actor: AuditActor) {
    return this.settings.set(id, parseInput(repositoryVerificationSchema, body), actor);
  }

  @Get('history')
  @ApiAnswer(repositoryVerificationHistorySchema)
  history(@Param('id') id: string) {
    return this.settings.history(id);
  }
}
