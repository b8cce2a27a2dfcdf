import { Controller, Get, Query, Req, Res } from '@nestjs/common';
import { ApiBearerAuth, ApiProduces, ApiQuery, ApiTags } from '@nestjs/swagger';
import {
  FLEET_STATUS_FILTERS,
  fleetEventViewSchema,
  fleetViewSchema,
  sessionViewSchema,
  type FleetView,
  type SessionView,
} from '@flotilla/contract';
import type { Response } from 'express';
import type { PeopleRequest } from '../auth/principal.js';
import { ApiAnswer } from '../common/api-docs.js';
import { parseInput } from '../common/hub-error.js';
import { FleetEvents } from './fleet-events.service.js';
import { fleetQuery } from './fleet-filter.js';
import { FleetViewService } from './fleet-view.service.js';

const HEARTBEAT_MS = 15_000;

@ApiTags('fleet')
@ApiBearerAuth()
@Controller('api/v1')
export class FleetViewController {
  constructor(
    private readonly fleet: FleetViewService,
    private readonly changes: FleetEvents,
  ) {}

  /**
   * The fleet matrix: clusters (rows, by name) × ApplicationSets (columns), each cell a target with
   * its sync, health, revision and one current reason. Every filter is applied on the hub and the
   * counts cover all matches; pass `nextCursor` back as `cursor` for the next page of clusters.
   */
  @Get('fleet')
  @ApiQuery({
    name: 'selector',
    required: false,
    description: 'cluster labels, e.g. env=prod,region in (eu,us)',
  })
  @ApiQuery({ name: 'appSet', required: false })
  @ApiQuery({ name: 'project', required: false })
  @ApiQuery({ name: 'status', required: false, enum: FLEET_STATUS_FILTERS })
  @ApiQuery({ name: 'q', required: false, description: 'text in a cluster, target or appset name' })
  @ApiQuery({ name: 'limit', required: false, description: 'clusters per page, 1-200 (default 50)' })
  @ApiQuery({ name: 'cursor', required: false })
  @ApiAnswer(fleetViewSchema)
  @ApiQuery({
    name: 'offset',
    required: false,
    description:
      'instead of a cursor: matching clusters to skip (a scrolled view asking for the rows in sight)',
  })
  view(@Query() query: unknown): Promise<FleetView> {
    return this.fleet.view(parseInput(fleetQuery, query, 'query'));
  }

  /** Who the caller is and what their role allows (a client hides what it may not do; the hub refuses it anyway). */
  @Get('session')
  @ApiAnswer(sessionViewSchema)
  session(@Req() req: PeopleRequest): SessionView {
    const p = req.principal;
    return { subject: p?.actor ?? 'user:unknown', role: p?.role ?? 'viewer', open: p?.kind === 'open' };
  }

  /**
   * Server-Sent Events: `event: fleet` with the names of targets and clusters that changed (read
   * from the database, so every replica sees every change); a comment line every 15 s keeps proxies
   * from closing the stream. Clients refetch what they show.
   */
  @Get('events')
  @ApiProduces('text/event-stream')
  @ApiAnswer(fleetEventViewSchema, {
    type: 'text/event-stream',
    description: 'a text/event-stream whose `event: fleet` blocks carry this JSON as `data:`',
  })
  events(@Req() req: PeopleRequest, @Res() res: Response): void {
    res.status(200);
    res.setHeader('Content-Type', 'text/event-stream; charset=utf-8');
    res.setHeader('Cache-Control', 'no-cache, no-transform');
    res.setHeader('X-Accel-Buffering', 'no');
    res.flushHeaders();
    res.write(': connected\n\n');
    const unsubscribe = this.changes.subscribe((event) => {
      res.write(`event: fleet\ndata: ${JSON.stringify(event)}\n\n`);
    });
    const heartbeat = setInterval(() => res.write(': heartbeat\n\n'), HEARTBEAT_MS);
    heartbeat.unref();
    req.on('close', () => {
      clearInterval(heartbeat);
      unsubscribe();
    });
  }
}
