import { type AuditActor, revertViewSchema } from '@flotilla/contract';
import { Body, Controller, HttpCode, Param, Post, UseGuards } from '@nestjs/common';
import { ApiBearerAuth, ApiTags } from '@nestjs/swagger';
import { ApiAnswer, ApiInput } from '../../common/api-docs.js';
import { Actor } from '../../auth/actor.js';
import { AdminTokenGuard } from '../../auth/admin-token.guard.js';
import { Roles } from '../../auth/roles.decorator.js';
import { revertRequestSchema, RevertsService } from './reverts.service.js';

/** Rollback by revert: the roles are the pins API's (an operator for one target, an admin for an appset). */
@ApiTags('reverts')
@ApiBearerAuth()
@UseGuards(AdminTokenGuard)
@Controller('api/v1')
export class RevertsController {
  constructor(private readonly reverts: RevertsService) {}

  /**
   * Writes one commit reverting what changed the target's render since `to` (default: its pin's
   * revision) on a new branch, and opens a pull request through the Git host's API. Needs write
   * access to the target's repository (409 `no-write-access` naming it otherwise).
   */
  @Post('targets/:name/revert')
  @Roles('operator')
  @HttpCode(201)
  @ApiInput(revertRequestSchema, 'RevertRequest', { example: { reason: 'v1.5.0 breaks checkout' } })
  @ApiAnswer(revertViewSchema, { status: 201 })
  revertTarget(@Param('name') name: string, @Body() body: unknown, @Actor() actor: AuditActor) {
    return this.reverts.open({ target: name }, body, actor);
  }

  /** The same for every target of an appset (one repository, one revision). */
  @Post('appsets/:name/revert')
  @HttpCode(201)
  @ApiInput(revertRequestSchema, 'RevertRequest')
  @ApiAnswer(revertViewSchema, { status: 201 })
  revertAppSet(@Param('name') name: string, @Body() body: unknown, @Actor() actor: AuditActor) {
    return this.reverts.open({ appSet: name }, body, actor);
  }
}
