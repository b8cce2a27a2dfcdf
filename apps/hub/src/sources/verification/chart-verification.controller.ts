import {
  type AuditActor,
  chartRepositoryVerificationHistorySchema,
  chartRepositoryVerificationListSchema,
  chartRepositoryVerificationQuerySchema,
  chartRepositoryVerificationSchema,
  chartRepositoryVerificationViewSchema,
} from '@flotilla/contract';
import { Body, Controller, Get, Put, Query, UseGuards } from '@nestjs/common';
import { ApiBearerAuth, ApiTags } from '@nestjs/swagger';
import { Actor } from '../../auth/actor.js';
import { AdminTokenGuard } from '../../auth/admin-token.guard.js';
import { Roles } from '../../auth/roles.decorator.js';
import { ApiAnswer, ApiInput, ApiQueryOf } from '../../common/api-docs.js';
import { parseInput } from '../../common/hub-error.js';
import { ChartVerificationSettingsService } from './chart-verification-settings.service.js';

/** A chart repository's Helm provenance requirement: `none`, `when-present` or `required`, and its keyring. */
@ApiTags('chart-repositories')
@ApiBearerAuth()
@UseGuards(AdminTokenGuard)
@Controller('api/v1/chart-repositories/verification')
export class ChartVerificationController {
  constructor(private readonly settings: ChartVerificationSettingsService) {}

  /** With `url`: that repository's setting (`none` when it has none), as a list of one; without: every setting. */
  @Get()
  @ApiQueryOf(chartRepositoryVerificationQuerySchema)
  @ApiAnswer(chartRepositoryVerificationListSchema)
  async get(@Query() query: unknown) {
    const { url } = parseInput(chartRepositoryVerificationQuerySchema, query);
    return url === undefined ? this.settings.list() : [await this.settings.get(url)];
  }

  /** Replaces the repository's setting and keyring (left out: empty); the previous version is kept. */
  @Put()
  @Roles('admin')
  @ApiInput(chartRepositoryVerificationSchema, undefined, {
    example: {
      url: 'https://charts.example.com',
      verify: 'required',
      gpgKeys: '-----BEGIN PGP PUBLIC KEY BLOCK-----\n…\n-----END PGP PUBLIC KEY BLOCK-----\n',
    },
  })
  @ApiAnswer(chartRepositoryVerificationViewSchema)
  set(@Body() body: unknown, @Actor() actor: AuditActor) {
    return this.settings.set(parseInput(chartRepositoryVerificationSchema, body), actor);
  }

  /** Every version of the repository's setting (without `url`: of every repository's), newest first. */
  @Get('history')
  @ApiQueryOf(chartRepositoryVerificationQuerySchema)
  @ApiAnswer(chartRepositoryVerificationHistorySchema)
  history(@Query() query: unknown) {
    return this.settings.history(parseInput(chartRepositoryVerificationQuerySchema, query).url);
  }
}
