import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Options } from 'pino-http';
import type { HubConfig } from '../config/hub-config.js';

/**
 * The header that names a request end to end: a proxy's or client's id is kept (so one id follows a
 * request through the proxy's log, the hub's log and the error the caller sees), any other gets a
 * fresh UUID. Echoed on every answer.
 */
export const REQUEST_ID_HEADER = 'x-request-id';

/** What a caller may choose as an id: short, printable, no spaces — so it cannot forge log lines. */
const CALLER_REQUEST_ID = /^[A-Za-z0-9._:@/+=-]{1,128}$/;

/** The request's id: the caller's when it is a safe one, else a new UUID; set on the answer too. */
export function requestIdOf(req: IncomingMessage, res: ServerResponse): string {
  const given = req.headers[REQUEST_ID_HEADER];
  const id = typeof given === 'string' && CALLER_REQUEST_ID.test(given) ? given : randomUUID();
  if (!res.headersSent) res.setHeader(REQUEST_ID_HEADER, id);
  return id;
}

/**
 * Every request header that carries a credential: people's and agents' bearer tokens, a proxy's,
 * cookies, and each Git host's webhook secret or signature (GitLab sends the secret itself).
 * A new header that carries one belongs here; the security suite sends each and reads the log.
 */
export const CREDENTIAL_HEADERS = [
  'authorization',
  'proxy-authorization',
  'cookie',
  'x-gitlab-token',
  'x-hub-signature',
  'x-hub-signature-256',
  'x-gitea-signature',
  'x-gogs-signature',
] as const;

/** pino-http's options for the hub's request log: health probes unlogged, credentials redacted. */
export function requestLogOptions(config: HubConfig, stream?: NodeJS.WritableStream): Options {
  return {
    level: config.log.level,
    genReqId: requestIdOf,
    autoLogging: { ignore: (req) => ['/healthz', '/readyz', '/metrics'].includes(req.url ?? '') },
    redact: {
      paths: [...CREDENTIAL_HEADERS.map((h) => `req.headers["${h}"]`), 'res.headers["set-cookie"]'],
      censor: '[redacted]',
    },
    ...(stream && { stream }),
  };
}
