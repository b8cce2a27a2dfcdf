import type { NextFunction, Request, RequestHandler, Response } from 'express';
import express from 'express';
import type { ApiError } from '@flotilla/contract';

export const WEBHOOK_PATH = '/api/v1/webhooks';

/** Providers send small pushes (GitHub caps its payloads at 25 MB, but a push is a few kB). */
export const WEBHOOK_BODY_LIMIT_BYTES = 1024 * 1024;

/**
 * Keeps the webhook body as raw bytes (signatures cover the exact bytes, not re-serialised JSON).
 * Mounted before the JSON parser, which then leaves these requests alone. A larger body is refused
 * with 413 before it is read further.
 */
export function webhookBodyParser(limit = WEBHOOK_BODY_LIMIT_BYTES): RequestHandler {
  const raw = express.raw({ type: () => true, limit });
  return (req: Request, res: Response, next: NextFunction) => {
    raw(req, res, (err?: unknown) => {
      if (err === undefined || err === null) {
        next();
        return;
      }
      const status =
        typeof err === 'object' && 'status' in err && typeof err.status === 'number' ? err.status : 400;
      const body: ApiError =
        status === 413
          ? { code: 'payload-too-large', message: `webhook bodies are limited to ${limit} bytes` }
          : {
              code: 'invalid-request',
              message: `unreadable webhook body: ${err instanceof Error ? err.message : 'unknown error'}`,
            };
      res.status(status).json(body);
    });
  };
}
