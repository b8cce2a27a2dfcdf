import type { Options } from 'pino-http';
import type { HubConfig } from '../config/hub-config.js';

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
    autoLogging: { ignore: (req) => ['/healthz', '/readyz', '/metrics'].includes(req.url ?? '') },
    redact: {
      paths: [...CREDENTIAL_HEADERS.map((h) => `req.headers["${h}"]`), 'res.headers["set-cookie"]'],
      censor: '[redacted]',
    },
    ...(stream && { stream }),
  };
}
