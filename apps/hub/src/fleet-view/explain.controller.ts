import { Controller, Get, Query, UseGuards } from '@nestjs/common';
import { ApiBearerAuth, ApiTags } from '@nestjs/swagger';
import { explainViewSchema, type ExplainView } from '@flotilla/contract';
import { z } from 'zod';
import { AdminTokenGuard } from '../auth/admin-token.guard.js';
import { parseInput } from '../common/hub-error.js';
import { ApiAnswer, ApiQueryOf } from '../common/api-docs.js';
import { ExplainService } from './explain.service.js';

const explainQuerySchema = z.object({
  cluster: z.string().min(1, 'name the cluster: ?cluster=<name>'),
  appset: z.string().min(1, 'name the appset: ?appset=<name>'),
});

@ApiTags('explain')
@ApiBearerAuth()
@UseGuards(AdminTokenGuard)
@Controller('api/v1/explain')
export class ExplainController {
  constructor(private readonly explainer: ExplainService) {}

  /** Why cluster X gets (or does not get) appset Y, at which revision, and what holds it. */
  @Get()
  @ApiQueryOf(explainQuerySchema)
  @ApiAnswer(explainViewSchema)
  explain(@Query() query: unknown): Promise<ExplainView> {
    const { cluster, appset } = parseInput(explainQuerySchema, query, 'query');
    return this.explainer.explain(cluster, appset);
  }
}
