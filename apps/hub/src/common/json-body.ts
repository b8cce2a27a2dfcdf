import type { NextFunction, Request, RequestHandler, Response } from 'express';
import express from 'express';
import type { ApiError } from '@flotilla/contract';

/**
 * express.json with an explicit cap whose refusals are ApiError bodies like every other error:
 * 413 `payload-too-large` naming the limit (the body is not read past it), 400 for unreadable JSON.
 * Mounted per path before the general one; body-parser skips a body an earlier parser consumed.
 */
export function jsonBodyParser(limitBytes: number, what: string): RequestHandler {
  const parse = express.json({ limit: limitBytes });
  return (req: Request, res: Response, next: NextFunction) => {
    parse(req, res, (err?: unknown) => {
      if (err === undefined || err === null) {
        next();
        return;
      }
      const status =
        typeof err === 'object' && 'status' in err && typeof err.status === 'number' ? err.status : 400;
      const body: ApiError =
        status === 413
          ? {
              code: 'payload-too-large',
              message: `${what} is limited to ${limitBytes} bytes; this one is larger`,
            }
          : {
              code: 'invalid-request',
              message: `unreadable JSON body: ${err instanceof Error ? err.message : 'unknown error'}`,
            };
      res.status(status).json(body);
    });
  };
}
