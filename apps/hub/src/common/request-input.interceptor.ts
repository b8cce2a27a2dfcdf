import {
  type CallHandler,
  type ExecutionContext,
  Inject,
  Injectable,
  type NestInterceptor,
} from '@nestjs/common';
import type { Request, Response } from 'express';
import { from, type Observable, switchMap } from 'rxjs';
import { AGENT_API, findUnstorableText, unstorableTextMessage } from '@flotilla/contract';
import { HUB_CONFIG, type HubConfig } from '../config/hub-config.js';
import { HubError } from './hub-error.js';
import { readJsonBody } from './json-body.js';

/**
 * Every request's input, once its route's guards let it through: the body is read only now (an
 * anonymous caller's 9 MiB is refused with 401 unread, not parsed into a 400), within the route's
 * limit and nesting bound; then path parameters, query and body are checked for text PostgreSQL
 * cannot store (NUL, lone surrogates), answered 400 naming the field instead of a 500 from the
 * database. An agent's report batch is checked report by report in its controller instead: one bad
 * report is refused, the rest of the batch kept.
 */
@Injectable()
export class RequestInputInterceptor implements NestInterceptor {
  constructor(@Inject(HUB_CONFIG) private readonly config: HubConfig) {}

  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    if (context.getType() !== 'http') return next.handle();
    const http = context.switchToHttp();
    const req = http.getRequest<Request>();
    const res = http.getResponse<Response>();
    return from(this.check(req, res)).pipe(switchMap(() => next.handle()));
  }

  private async check(req: Request, res: Response): Promise<void> {
    const reports = req.path === AGENT_API.reports;
    await readJsonBody(
      req,
      res,
      reports ? this.config.limits.agentReportBodyBytes : this.config.limits.apiBodyBytes,
      reports ? 'an agent report batch' : 'a request body',
    );
    refuseUnstorable(req.params, 'path parameter');
    refuseUnstorable(req.query, 'query parameter');
    if (!reports && !Buffer.isBuffer(req.body)) refuseUnstorable(req.body, 'request body');
  }
}

function refuseUnstorable(value: unknown, what: string): void {
  const found = findUnstorableText(value);
  if (found)
    throw new HubError(400, 'invalid-text', `invalid ${what}: ${unstorableTextMessage(found)}`, found.path);
}
