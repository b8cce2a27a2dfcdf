import { type ArgumentsHost, Catch, type ExceptionFilter, HttpException, Logger } from '@nestjs/common';
import type { ApiError } from '@flotilla/contract';
import type { Request, Response } from 'express';
import { allowedMethods } from './allowed-methods.js';
import { HubError } from './hub-error.js';

/**
 * Every error leaves the hub as an ApiError body, whatever threw it, carrying the request's id (also
 * in the `X-Request-Id` header and on the request's log line) so a person can quote one string.
 */
@Catch()
export class ApiErrorFilter implements ExceptionFilter {
  private readonly logger = new Logger('ApiError');

  catch(exception: unknown, host: ArgumentsHost): void {
    const res = host.switchToHttp().getResponse<Response>();
    const req = host.switchToHttp().getRequest<Request & { id?: unknown }>();
    const requestId = typeof req.id === 'string' ? req.id : undefined;
    let status = 500;
    let body: ApiError = {
      code: 'internal',
      message: `internal error; see the hub log${requestId ? ` for request ${requestId}` : ''}`,
    };
    if (exception instanceof HubError) {
      status = exception.status;
      body = exception.toApiError();
      if (exception.headers && !res.headersSent) res.set(exception.headers);
    } else if (exception instanceof HttpException) {
      status = exception.getStatus();
      const r = exception.getResponse();
      const message =
        typeof r === 'object' && r !== null && 'message' in r ? String(r.message) : exception.message;
      body = { code: status === 404 ? 'not-found' : `http-${status}`, message };
      // No route matched: when the path exists under other methods, say so (405 with Allow), as
      // HTTP asks, instead of a 404 that reads as "no such thing".
      const allow = status === 404 && !req.route ? allowedMethods(req) : [];
      if (allow.length > 0) {
        status = 405;
        body = {
          code: 'method-not-allowed',
          message: `${req.method} is not allowed on ${req.path}: use ${allow.join(', ')}`,
        };
        if (!res.headersSent) res.set('Allow', allow.join(', '));
      }
    } else {
      this.logger.error({
        requestId,
        stack: exception instanceof Error ? (exception.stack ?? exception.message) : String(exception),
      });
    }
    if (requestId !== undefined) body.requestId = requestId;
    if (!res.headersSent) res.status(status).json(body);
  }
}
