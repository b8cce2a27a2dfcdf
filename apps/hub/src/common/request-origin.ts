import { AsyncLocalStorage } from 'node:async_hooks';
import type { NextFunction, Request, Response } from 'express';

/**
 * Where a request came from, for the audit log's "from where": the client address as Express sees
 * it (behind a proxy, `req.ip` honours Express's `trust proxy` setting) and the client's User-Agent
 * (the CLI, a browser, an agent version). Work that no request started (sweeps, queue jobs) has none.
 */
export interface RequestOrigin {
  ip: string;
  userAgent?: string;
}

const origins = new AsyncLocalStorage<RequestOrigin>();

/**
 * Express middleware that makes the request's origin visible to everything the request runs,
 * however deep (the audit log reads it instead of every call site passing it down). Mounted after
 * the body parsers, whose stream callbacks would otherwise run outside the request's context.
 */
export function requestOriginMiddleware(req: Request, _res: Response, next: NextFunction): void {
  const userAgent = req.get('user-agent');
  const origin: RequestOrigin = {
    ip: req.ip ?? req.socket.remoteAddress ?? 'unknown',
    ...(userAgent !== undefined && { userAgent: userAgent.slice(0, 200) }),
  };
  origins.run(origin, next);
}

/** The origin of the request being served, if this code runs on behalf of one. */
export function currentOrigin(): RequestOrigin | undefined {
  return origins.getStore();
}
