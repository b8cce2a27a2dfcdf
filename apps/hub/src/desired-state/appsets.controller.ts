import {
  type AuditActor,
  appSetListingSchema,
  appSetRefreshViewSchema,
  appSetViewSchema,
  expansionOutcomeViewSchema,
  expansionPreviewViewSchema,
} from '@flotilla/contract';
import { Body, Controller, Delete, Get, HttpCode, Param, Post, Query, Res, UseGuards } from '@nestjs/common';

import { ApiBearerAuth, ApiBody, ApiTags } from '@nestjs/swagger';

import { ApiPageQuery, isPaged, parsePageQuery } from '../common/name-page.js';

import type { Response } from 'express';
import { Actor } from '../auth/actor.js';

import { AdminTokenGuard } from '../auth/admin-token.guard.js';

import { Roles } from '../auth/roles.decorator.js';

import { AppSetsService, confirmExpansionBody, refreshRequestSchema } from './appsets.service.js';
import { ApiAnswer, ApiInput } from '../common/api-docs.js';

@ApiTags('appsets')
@ApiBearerAuth()
@UseGuards(AdminTokenGuard)
@Controller('api/v1/appsets')
export class AppSetsController {
  constructor(private readonly appsets: AppSetsService) {}

  /** Creates or replaces an ApplicationSet (Flotilla's or Argo CD's form): 201 created, 200 replaced. */
  @Post()
  @Roles('admin')
  @ApiBody({ description: 'An ApplicationSet document (flotilla.dev/v1alpha1 or argoproj.io/v1alpha1)' })
  @ApiAnswer(appSetViewSchema, { status: [201, 200] })
  async apply(@Body() body: unknown, @Actor() actor: AuditActor, @Res({ passthrough: true }) res: Response) {
    const { created, appSet } = await this.appsets.apply(body, actor);
    res.status(created ? 201 : 200);
    return appSet;
  }

  /** Dry run of a document (not stored): targets, what would be created/updated/deleted, the guard. */
  @Post('preview')
  @Roles('viewer') // a dry run: stores nothing
  @HttpCode(200)
  @ApiBody({ description: 'An ApplicationSet document; nothing is stored' })
  @ApiAnswer(expansionPreviewViewSchema)
  preview(@Body() body: unknown) {
    return this.appsets.previewDocument(body);
  }

  @Get(':name/preview')
  @ApiAnswer(expansionPreviewViewSchema)
  previewStored(@Param('name') name: string) {
    return this.appsets.preview(name);
  }

  /** `{inputsHash, reason}`: applies the expansion the deletion guard holds, as it was computed. */
  @Post(':name/confirm-expansion')
  @Roles('operator')
  @HttpCode(200)
  @ApiInput(confirmExpansionBody, 'ConfirmExpansionRequest')
  @ApiAnswer(expansionOutcomeViewSchema)
  confirmExpansion(@Param('name') name: string, @Body() body: unknown, @Actor() actor: AuditActor) {
    return this.appsets.confirmExpansion(name, body, actor);
  }

  /**
   * Evaluates the appset again now; `hard` first fetches every Git repository it reads. Queued:
   * 202 with the repositories whose fetch was asked (their status says when it ended).
   */
  @Post(':name/refresh')
  @Roles('operator')
  @HttpCode(202)
  @ApiInput(refreshRequestSchema, 'AppSetRefreshRequest', { required: false })
  @ApiAnswer(appSetRefreshViewSchema, { status: 202 })
  refresh(@Param('name') name: string, @Body() body: unknown, @Actor() actor: AuditActor) {
    return this.appsets.refresh(name, body, actor);
  }

  /** By name; with `limit` or `cursor`, one page `{items, nextCursor}` (see common/name-page.ts). */
  @Get()
  @ApiPageQuery()
  @ApiAnswer(appSetListingSchema)
  list(@Query() query: unknown) {
    const q = parsePageQuery(query);
    return isPaged(q) ? this.appsets.page(q) : this.appsets.list();
  }

  @Get(':name')
  @ApiAnswer(appSetViewSchema)
  get(@Param('name') name: string) {
    return this.appsets.get(name);
  }

  @Delete(':name')
  @Roles('admin')
  @HttpCode(204)
  async remove(@Param('name') name: string, @Actor() actor: AuditActor): Promise<void> {
    await this.appsets.remove(name, actor);
  }
}
