import {
  type AuditActor,
  type SyncWindowCalendarView,
  syncWindowCalendarViewSchema,
  syncWindowHistorySchema,
  syncWindowListingSchema,
  syncWindowViewSchema,
} from '@flotilla/contract';
import { ApiPageQuery, isPaged, parsePageQuery } from '../../common/name-page.js';
import { Body, Controller, Delete, Get, HttpCode, Param, Post, Put, Query, UseGuards } from '@nestjs/common';
import { ApiBearerAuth, ApiTags } from '@nestjs/swagger';
import { ApiAnswer, ApiInput, ApiQueryOf } from '../../common/api-docs.js';
import { Actor } from '../../auth/actor.js';
import { AdminTokenGuard } from '../../auth/admin-token.guard.js';
import { HubError, parseInput } from '../../common/hub-error.js';
import {
  createWindowSchema,
  deleteWindowQuery,
  parseWindowInput,
  windowRequestSchema,
} from './window-input.js';
import { WindowsService } from './windows.service.js';
import { windowIntervals } from '@flotilla/windows';
import { z } from 'zod';
import { FleetOwnership } from '../../ownership/fleet-ownership.service.js';

const calendarQuery = z.object({
  from: z.iso
    .datetime({ offset: true })
    .transform((s) => new Date(s))
    .optional(),
  days: z.coerce.number().int().min(1).max(31).default(7),
});

@ApiTags('windows')
@ApiBearerAuth()
@UseGuards(AdminTokenGuard)
@Controller('api/v1/windows')
export class WindowsController {
  constructor(
    private readonly windows: WindowsService,
    private readonly ownership: FleetOwnership,
  ) {}

  @Post()
  @ApiInput(windowRequestSchema, undefined, {
    example: {
      name: 'weekend-freeze',
      kind: 'deny',
      schedule: '0 18 * * 5',
      duration: '62h',
      timeZone: 'Europe/Berlin',
      clusters: ['prod-*'],
      reason: 'no production changes over the weekend',
    },
  })
  @ApiAnswer(syncWindowViewSchema, { status: 201 })
  create(@Body() body: unknown, @Actor() actor: AuditActor) {
    const { name } = parseInput(createWindowSchema, body);
    return this.windows.create(name, parseWindowInput(body), actor);
  }

  /** By name; with `limit` or `cursor`, one page `{items, nextCursor}` (see common/name-page.ts). */
  @Get()
  @ApiPageQuery()
  @ApiAnswer(syncWindowListingSchema)
  list(@Query() query: unknown) {
    const q = parsePageQuery(query);
    return isPaged(q) ? this.windows.page(q) : this.windows.list();
  }

  @Get(':name')
  @ApiAnswer(syncWindowViewSchema)
  get(@Param('name') name: string) {
    return this.windows.get(name);
  }

  /** Replaces the window with a new version (the name in the path; a body `name` must match it). */
  @Put(':name')
  @ApiInput(windowRequestSchema)
  @ApiAnswer(syncWindowViewSchema)
  async update(@Param('name') name: string, @Body() body: unknown, @Actor() actor: AuditActor) {
    const { name: bodyName, ...rest } = (body ?? {}) as Record<string, unknown>;
    if (bodyName !== undefined && bodyName !== name) {
      throw new HubError(
        400,
        'invalid-request',
        `name: must be "${name}" (the name in the path) or absent`,
        'name',
      );
    }
    const input = parseWindowInput(rest);
    // A window from a fleet repository changes in Git (or under a break-glass, then diverging).
    await this.ownership.checkEdit('SyncWindow', name, actor);
    return this.windows.update(name, input, actor);
  }

  @Delete(':name')
  @HttpCode(204)
  @ApiQueryOf(deleteWindowQuery)
  async remove(
    @Param('name') name: string,
    @Query() query: unknown,
    @Actor() actor: AuditActor,
  ): Promise<void> {
    const { reason } = parseInput(deleteWindowQuery, query, 'query');
    await this.ownership.checkEdit('SyncWindow', name, actor);
    await this.windows.remove(name, reason, actor);
  }

  /**
   * When the window is active from `from` (default now) for `days` days (1-31, default 7): its
   * intervals in absolute time, computed by the same evaluation the agents use.
   */
  @Get(':name/calendar')
  @ApiQueryOf(calendarQuery)
  @ApiAnswer(syncWindowCalendarViewSchema)
  async calendar(@Param('name') name: string, @Query() query: unknown): Promise<SyncWindowCalendarView> {
    const q = parseInput(calendarQuery, query, 'query');
    const window = await this.windows.get(name);
    const from = q.from ?? new Date();
    const to = new Date(from.getTime() + q.days * 86_400_000);
    return {
      window: window.name,
      kind: window.kind,
      timeZone: window.timeZone,
      from: from.toISOString(),
      to: to.toISOString(),
      intervals: windowIntervals(window, from.getTime(), to.getTime()).map((i) => ({
        start: new Date(i.start).toISOString(),
        end: new Date(i.end).toISOString(),
      })),
    };
  }

  @Get(':name/history')
  @ApiAnswer(syncWindowHistorySchema)
  history(@Param('name') name: string) {
    return this.windows.history(name);
  }
}
