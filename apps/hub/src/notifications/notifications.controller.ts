import {
  type AuditActor,
  DELIVERY_STATUSES,
  notificationDeliveryListSchema,
  notificationDestinationListingSchema,
  notificationDestinationViewSchema,
  notificationPolicyListingSchema,
  notificationPolicyViewSchema,
} from '@flotilla/contract';
import { Body, Controller, Delete, Get, HttpCode, Param, Post, Query, Res } from '@nestjs/common';
import { ApiBearerAuth, ApiTags } from '@nestjs/swagger';
import { notificationPolicyObjectSchema } from '@flotilla/fleet-config';
import { ApiAnswer, ApiInput, ApiQueryOf } from '../common/api-docs.js';
import type { Response } from 'express';
import { z } from 'zod';
import { Actor } from '../auth/actor.js';
import { parseInput } from '../common/hub-error.js';
import { destinationInputSchema } from './destinations/destination-types.js';
import { NotificationsService } from './notifications.service.js';
import { ApiPageQuery, isPaged, parsePageQuery } from '../common/name-page.js';

const deliveriesQuery = z.strictObject({
  status: z.enum(DELIVERY_STATUSES).optional(),
  policy: z.string().min(1).optional(),
  destination: z.string().min(1).optional(),
  trigger: z.string().min(1).optional(),
  limit: z.coerce.number().int().min(1).max(1000).default(100),
});

/** Destinations and policies are admin's to change (destinations hold secrets); anyone may read. */
@ApiTags('notifications')
@ApiBearerAuth()
@Controller('api/v1/notifications')
export class NotificationsController {
  constructor(private readonly notifications: NotificationsService) {}

  @Post('destinations')
  @ApiInput(destinationInputSchema, 'NotificationDestinationInput')
  @ApiAnswer(notificationDestinationViewSchema, { status: [201, 200] })
  async putDestination(
    @Body() body: unknown,
    @Actor() actor: AuditActor,
    @Res({ passthrough: true }) res: Response,
  ) {
    const { created, destination } = await this.notifications.putDestination(
      parseInput(destinationInputSchema, body),
      actor,
    );
    res.status(created ? 201 : 200);
    return destination;
  }

  /** By name; with `limit` or `cursor`, one page `{items, nextCursor}` (see common/name-page.ts). */
  @Get('destinations')
  @ApiPageQuery()
  @ApiAnswer(notificationDestinationListingSchema)
  listDestinations(@Query() query: unknown) {
    const q = parsePageQuery(query);
    return isPaged(q) ? this.notifications.destinationsPage(q) : this.notifications.listDestinations();
  }

  @Delete('destinations/:name')
  @HttpCode(204)
  async deleteDestination(@Param('name') name: string, @Actor() actor: AuditActor): Promise<void> {
    await this.notifications.deleteDestination(name, actor);
  }

  @Post('policies')
  @ApiInput(notificationPolicyObjectSchema, 'NotificationPolicyDocument')
  @ApiAnswer(notificationPolicyViewSchema, { status: [201, 200] })
  async putPolicy(
    @Body() body: unknown,
    @Actor() actor: AuditActor,
    @Res({ passthrough: true }) res: Response,
  ) {
    const { created, policy } = await this.notifications.putPolicy(body, actor);
    res.status(created ? 201 : 200);
    return policy;
  }

  /** By name; with `limit` or `cursor`, one page `{items, nextCursor}` (see common/name-page.ts). */
  @Get('policies')
  @ApiPageQuery()
  @ApiAnswer(notificationPolicyListingSchema)
  listPolicies(@Query() query: unknown) {
    const q = parsePageQuery(query);
    return isPaged(q) ? this.notifications.policiesPage(q) : this.notifications.listPolicies();
  }

  @Get('policies/:name')
  @ApiAnswer(notificationPolicyViewSchema)
  getPolicy(@Param('name') name: string) {
    return this.notifications.getPolicy(name);
  }

  @Delete('policies/:name')
  @HttpCode(204)
  async deletePolicy(@Param('name') name: string, @Actor() actor: AuditActor): Promise<void> {
    await this.notifications.deletePolicy(name, actor);
  }

  @Get('deliveries')
  @ApiQueryOf(deliveriesQuery)
  @ApiAnswer(notificationDeliveryListSchema)
  deliveries(@Query() query: unknown) {
    return this.notifications.listDeliveries(parseInput(deliveriesQuery, query, 'query'));
  }
}
