import type { LoggerService } from '@nestjs/common';
import type { RequestHandler } from 'express';
import { pinoHttp, type HttpLogger, type Options } from 'pino-http';

type Level = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace';

/**
 * The hub's one logger: Nest's framework and service logs and the request log, as JSON lines from
 * one pino instance (so both share level, redaction and destination). A small adapter written here
 * because nestjs-pino, which did this, requires Node 22.12 while the hub supports Node 20.19 too.
 *
 * Nest calls `log(message, ...params)` where a trailing string is the context (the class name) and,
 * for `error`, a string before it is the stack — the same reading as Nest's own ConsoleLogger.
 */
export class HubLogger implements LoggerService {
  private readonly http: HttpLogger;

  constructor(options: Options) {
    this.http = pinoHttp(options);
  }

  /** Express middleware writing one line per finished request (with `req`, `res` and timing). */
  get requestLog(): RequestHandler {
    return this.http;
  }

  log(message: unknown, ...params: unknown[]): void {
    this.write('info', message, params);
  }
  error(message: unknown, ...params: unknown[]): void {
    this.write('error', message, params, true);
  }
  warn(message: unknown, ...params: unknown[]): void {
    this.write('warn', message, params);
  }
  debug(message: unknown, ...params: unknown[]): void {
    this.write('debug', message, params);
  }
  verbose(message: unknown, ...params: unknown[]): void {
    this.write('trace', message, params);
  }
  fatal(message: unknown, ...params: unknown[]): void {
    this.write('fatal', message, params, true);
  }

  private write(level: Level, message: unknown, params: unknown[], mayHaveStack = false): void {
    // Nest's Logger passes an absent stack as undefined: not a parameter worth a field.
    const rest = params.filter((p) => p !== undefined);
    const fields: Record<string, unknown> = {};
    if (rest.length > 0 && typeof rest[rest.length - 1] === 'string') fields['context'] = rest.pop();
    if (mayHaveStack && rest.length > 0 && typeof rest[0] === 'string') fields['stack'] = rest.shift();
    if (rest.length > 0) fields['params'] = rest;
    const logger = this.http.logger;
    if (message instanceof Error) logger[level]({ ...fields, err: message }, message.message);
    else if (message !== null && typeof message === 'object') logger[level]({ ...fields, ...message });
    else logger[level](fields, String(message));
  }
}
