import { type CallHandler, type ExecutionContext, Injectable, type NestInterceptor } from '@nestjs/common';
import type { Request, Response } from 'express';
import type { Observable } from 'rxjs';
import { HubMetrics } from './hub-metrics.service.js';

/** Counts every answered request by its route pattern (not the raw URL, which would explode labels). */
@Injectable()
export class HttpMetricsInterceptor implements NestInterceptor {
  constructor(private readonly metrics: HubMetrics) {}

  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    const http = context.switchToHttp();
    const req = http.getRequest<Request>();
    const res = http.getResponse<Response>();
    const started = process.hrtime.bigint();
    res.once('finish', () => {
      const route = (req.route as { path?: string } | undefined)?.path ?? 'unmatched';
      this.metrics.httpRequests.inc({ method: req.method, route, status: String(res.statusCode) });
      this.metrics.httpDuration.observe(
        { method: req.method, route },
        Number(process.hrtime.bigint() - started) / 1e9,
      );
    });
    return next.handle();
  }
}
