import { planReportSchema } from '@flotilla/plan';
import { Body, Controller, HttpCode, Post } from '@nestjs/common';
import { ApiBearerAuth, ApiTags } from '@nestjs/swagger';
import { Roles } from '../auth/roles.decorator.js';
import { ApiAnswer, ApiInput } from '../common/api-docs.js';
import { HubPlanService } from './hub-plan.service.js';
import { planBody } from './plan-request.js';

@ApiTags('plan')
@ApiBearerAuth()
@Controller('api/v1/plan')
export class PlanController {
  constructor(private readonly plans: HubPlanService) {}

  /**
   * `{fleetSource?, base, head, at?}`: what merging head over base of the fleet repository would do,
   * with the hub's live inventory and mirrors — the report `flotilla plan -o json` prints. Changes nothing.
   */
  @Post()
  @Roles('viewer') // a dry run: stores nothing
  @HttpCode(200)
  @ApiInput(planBody, 'PlanRequest', { example: { base: 'main', head: 'feature/bump-web' } })
  @ApiAnswer(planReportSchema)
  plan(@Body() body: unknown) {
    return this.plans.plan(body);
  }
}
