import { Controller, HttpCode, Post, Req, Res } from '@nestjs/common';
import { ApiTags } from '@nestjs/swagger';
import { zodDetails } from '@flotilla/contract';
import type { Request, Response } from 'express';
import { z } from 'zod';
import { HubError } from '../../common/hub-error.js';
import { Public } from '../../auth/roles.decorator.js';
import { parseWebhookEvent } from './webhook-payload.js';
import {
  detectProvider,
  verifyDelivery,
  WebhookAuthError,
  type WebhookDelivery,
} from './webhook-signature.js';
import { WebhooksService } from './webhooks.service.js';
import { webhookAnswerViewSchema } from '@flotilla/contract';
import { ApiAnswer } from '../../common/api-docs.js';

/**
 * Git push webhooks. Public: each provider authenticates with the shared secret (an HMAC of the body
 * or a token), so the admin token is not asked for. Answers at once; the fetch runs in the worker.
 */
@ApiTags('webhooks')
@Public()
@Controller('api/v1/webhooks')
export class WebhooksController {
  constructor(private readonly webhooks: WebhooksService) {}

  @Post('git')
  @HttpCode(202)
  @ApiAnswer(webhookAnswerViewSchema, { status: [202, 200] })
  async git(@Req() req: Request, @Res({ passthrough: true }) res: Response) {
    const secret = this.webhooks.secret;
    if (secret === null) {
      this.webhooks.count('unknown', 'disabled');
      throw new HubError(
        503,
        'webhooks-disabled',
        'Git webhooks are disabled on this hub: set FLOTILLA_WEBHOOK_SECRET (at least 16 characters) and give the same secret to the webhook',
      );
    }
    const raw: Buffer = Buffer.isBuffer(req.body) ? req.body : Buffer.alloc(0);
    let delivery: WebhookDelivery;
    try {
      delivery = detectProvider(req.headers);
    } catch (e) {
      if (!(e instanceof WebhookAuthError)) throw e;
      this.webhooks.count('unknown', 'invalid');
      throw new HubError(400, e.code, e.message);
    }
    try {
      verifyDelivery(delivery, req.headers, raw, secret);
    } catch (e) {
      if (!(e instanceof WebhookAuthError)) throw e;
      this.webhooks.count(delivery.provider, 'unauthorized');
      throw new HubError(401, e.code, e.message, e.header);
    }
    const event = this.readEvent(delivery, raw);
    switch (event.kind) {
      case 'ping':
        this.webhooks.count(delivery.provider, 'ping');
        res.status(200);
        return { ok: true };
      case 'ignored':
        this.webhooks.count(delivery.provider, 'ignored');
        return { matched: [], queued: 0, ignored: `event "${event.event}" is not a push` };
      case 'push': {
        const result = await this.webhooks.queueFetches(event.push);
        this.webhooks.count(delivery.provider, result.queued > 0 ? 'queued' : 'unmatched');
        return result;
      }
    }
  }

  private readEvent(delivery: WebhookDelivery, raw: Buffer): ReturnType<typeof parseWebhookEvent> {
    let json: unknown;
    try {
      json = JSON.parse(raw.toString('utf8'));
    } catch (e) {
      this.webhooks.count(delivery.provider, 'invalid');
      throw new HubError(
        400,
        'invalid-request',
        `the webhook body is not JSON (${e instanceof Error ? e.message : String(e)}); set the webhook's content type to application/json`,
      );
    }
    try {
      return parseWebhookEvent(delivery, json);
    } catch (e) {
      if (!(e instanceof z.ZodError)) throw e;
      this.webhooks.count(delivery.provider, 'invalid');
      const details = zodDetails(e);
      const first = details[0];
      throw new HubError(
        400,
        'invalid-request',
        `invalid ${delivery.provider} push payload: ${first ? `${first.path}: ${first.message}` : 'unreadable'}`,
        first?.path,
        details,
      );
    }
  }
}
