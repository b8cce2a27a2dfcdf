import {
  type AuditActor,
  pinListingSchema,
  pinListSchema,
  pinViewSchema,
  unpinnedViewSchema,
  type Page,
  type PinView,
} from '@flotilla/contract';
import { Body, Controller, Delete, Get, HttpCode, Param, Post, Query, UseGuards } from '@nestjs/common';
import { ApiBearerAuth, ApiTags } from '@nestjs/swagger';
import { ApiAnswer, ApiInput } from '../../common/api-docs.js';
import { Actor } from '../../auth/actor.js';
import { AdminTokenGuard } from '../../auth/admin-token.guard.js';
import { Roles } from '../../auth/roles.decorator.js';
import {
  appSetPinRequestSchema,
  appSetUnpinSchema,
  pinRequestSchema,
  PinsService,
  unpinSchema,
} from './pins.service.js';
import { ApiPageQuery, isPaged, parsePageQuery } from '../../common/name-page.js';

@ApiTags('pins')
@ApiBearerAuth()
@UseGuards(AdminTokenGuard)
@Controller('api/v1')
export class PinsController {
  constructor(private readonly pins: PinsService) {}

  /**
   * Every pin, newest first; an expired pin is shown (`expired: true`) but no longer served. With
   * `limit` or `cursor`, one page `{items, nextCursor}` in target name order (see common/name-page.ts).
   */
  @Get('pins')
  @ApiPageQuery()
  @ApiAnswer(pinListingSchema)
  list(@Query() query: unknown): Promise<PinView[] | Page<PinView>> {
    const q = parsePageQuery(query);
    return isPaged(q) ? this.pins.page(q) : this.pins.list();
  }

  /** Rolls one target back (or forward) to a revision, even under auto-sync, until unpinned or expired. */
  @Post('targets/:name/pin')
  @Roles('operator')
  @HttpCode(200)
  @ApiInput(pinRequestSchema, 'PinRequest', {
    example: { revision: 'v1.4.2', reason: 'v1.5.0 breaks checkout; hold until the fix' },
  })
  @ApiAnswer(pinViewSchema)
  pin(@Param('name') name: string, @Body() body: unknown, @Actor() actor: AuditActor) {
    return this.pins.pin(name, body, actor);
  }

  /** Pins every target of the appset on clusters matching `clusterSelector` (all without one), or none. */
  @Post('appsets/:name/pin')
  @HttpCode(200)
  @ApiInput(appSetPinRequestSchema, 'AppSetPinRequest')
  @ApiAnswer(pinListSchema)
  pinAppSet(@Param('name') name: string, @Body() body: unknown, @Actor() actor: AuditActor) {
    return this.pins.pinAppSet(name, body, actor);
  }

  @Delete('appsets/:name/pin')
  @HttpCode(200)
  @ApiInput(appSetUnpinSchema, 'AppSetUnpinRequest')
  @ApiAnswer(unpinnedViewSchema)
  async unpinAppSet(@Param('name') name: string, @Body() body: unknown, @Actor() actor: AuditActor) {
    return { unpinned: await this.pins.unpinAppSet(name, body, actor) };
  }

  @Delete('targets/:name/pin')
  @Roles('operator')
  @HttpCode(204)
  @ApiInput(unpinSchema, 'UnpinRequest')
  async unpin(@Param('name') name: string, @Body() body: unknown, @Actor() actor: AuditActor): Promise<void> {
    await this.pins.unpin(name, body, actor);
  }
}
