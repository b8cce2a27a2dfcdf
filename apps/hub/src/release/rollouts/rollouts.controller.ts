import {
  type AuditActor,
  rolloutDetailViewSchema,
  rolloutViewSchema,
  rolloutListSchema,
} from '@flotilla/contract';
import { Body, Controller, Get, HttpCode, Param, Post, Query, UseGuards } from '@nestjs/common';
import { ApiBearerAuth, ApiQuery, ApiTags } from '@nestjs/swagger';
import { ApiAnswer, ApiInput } from '../../common/api-docs.js';
import { z } from 'zod';
import { Actor } from '../../auth/actor.js';
import { AdminTokenGuard } from '../../auth/admin-token.guard.js';
import { Roles } from '../../auth/roles.decorator.js';
import { parseInput } from '../../common/hub-error.js';
import { RolloutControls } from './rollout-controls.service.js';
import { RolloutQueries } from './rollout-queries.service.js';
import { ApiPageQuery, pageQueryFields } from '../../common/name-page.js';

const listQuery = z.object({ appSet: z.string().min(1).optional() });
const getQuery = z.object({ revision: z.string().min(1).optional(), ...pageQueryFields });
const actionBody = z.object({
  reason: z.string().trim().min(1, 'say why (it goes to the audit log)').max(1000),
});

@ApiTags('rollouts')
@ApiBearerAuth()
@UseGuards(AdminTokenGuard)
@Controller('api/v1/rollouts')
export class RolloutsController {
  constructor(
    private readonly rollouts: RolloutQueries,
    private readonly controls: RolloutControls,
  ) {}

  /** Newest first (at most 200), optionally of one appset. */
  @Get()
  @ApiQuery({ name: 'appSet', required: false })
  @ApiAnswer(rolloutListSchema)
  list(@Query() query: unknown) {
    return this.rollouts.list(parseInput(listQuery, query, 'query').appSet);
  }

  /**
   * The appset's newest rollout (or `?revision=`): status, step, why it waits, every target's place.
   * With `limit` or `cursor` the targets are one page in name order, `nextCursor` the next page's;
   * `targetCount` counts them all either way.
   */
  @Get(':appSet')
  @ApiQuery({ name: 'revision', required: false })
  @ApiPageQuery()
  @ApiAnswer(rolloutDetailViewSchema)
  get(@Param('appSet') appSet: string, @Query() query: unknown) {
    const { revision, ...page } = parseInput(getQuery, query, 'query');
    return this.rollouts.get(appSet, revision, page);
  }

  @Post(':appSet/pause')
  @Roles('operator')
  @HttpCode(200)
  @ApiInput(actionBody, 'RolloutActionRequest', { example: { reason: 'canary error rate is up' } })
  @ApiAnswer(rolloutViewSchema)
  pause(@Param('appSet') appSet: string, @Body() body: unknown, @Actor() actor: AuditActor) {
    return this.controls.pause(appSet, actor, parseInput(actionBody, body).reason);
  }

  @Post(':appSet/resume')
  @Roles('operator')
  @HttpCode(200)
  @ApiInput(actionBody, 'RolloutActionRequest')
  @ApiAnswer(rolloutViewSchema)
  resume(@Param('appSet') appSet: string, @Body() body: unknown, @Actor() actor: AuditActor) {
    return this.controls.resume(appSet, actor, parseInput(actionBody, body).reason);
  }

  /** Opens a manual gate, or moves past the current step without waiting for it. */
  @Post(':appSet/promote')
  @Roles('operator')
  @HttpCode(200)
  @ApiInput(actionBody, 'RolloutActionRequest')
  @ApiAnswer(rolloutViewSchema)
  promote(@Param('appSet') appSet: string, @Body() body: unknown, @Actor() actor: AuditActor) {
    return this.controls.promote(appSet, actor, parseInput(actionBody, body).reason);
  }
}
