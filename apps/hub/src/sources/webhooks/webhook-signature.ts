import { createHmac, timingSafeEqual } from 'node:crypto';

export type WebhookProvider = 'github' | 'gitlab' | 'gitea';

/** Request headers as node gives them: lower-case names, a string or a list per name. */
export type WebhookHeaders = Record<string, string | string[] | undefined>;

/** Why a delivery is refused before its payload is read; `header` is the offending input. */
export class WebhookAuthError extends Error {
  override readonly name = 'WebhookAuthError';
  constructor(
    readonly code: 'webhook-provider-unknown' | 'webhook-signature-missing' | 'webhook-signature-invalid',
    message: string,
    readonly header?: string,
  ) {
    super(message);
  }
}

export interface WebhookDelivery {
  provider: WebhookProvider;
  /** The provider's event name (`push`, `ping`, `Push Hook`, …). */
  event: string;
}

function header(headers: WebhookHeaders, name: string): string | undefined {
  const v = headers[name];
  return Array.isArray(v) ? v[0] : v;
}

/**
 * Which provider sent this, by its event header. Gitea also sends GitHub's and Gogs' headers for
 * compatibility, so its own header is looked at first.
 */
export function detectProvider(headers: WebhookHeaders): WebhookDelivery {
  const gitea = header(headers, 'x-gitea-event');
  if (gitea) return { provider: 'gitea', event: gitea };
  const gitlab = header(headers, 'x-gitlab-event');
  if (gitlab) return { provider: 'gitlab', event: gitlab };
  const github = header(headers, 'x-github-event');
  if (github) return { provider: 'github', event: github };
  throw new WebhookAuthError(
    'webhook-provider-unknown',
    'not a GitHub, GitLab or Gitea webhook: expected an X-GitHub-Event, X-Gitlab-Event or X-Gitea-Event header',
  );
}

function hmacHex(secret: string, body: Buffer): Buffer {
  return Buffer.from(createHmac('sha256', secret).update(body).digest('hex'), 'utf8');
}

/** Constant time, whatever the lengths: both sides are hashed to the same size first. */
function sameBytes(a: Buffer, b: Buffer): boolean {
  const ha = createHmac('sha256', 'flotilla-compare').update(a).digest();
  const hb = createHmac('sha256', 'flotilla-compare').update(b).digest();
  return timingSafeEqual(ha, hb) && a.length === b.length;
}

/**
 * Checks a delivery against the shared secret: GitHub `X-Hub-Signature-256: sha256=<hex>` and Gitea
 * `X-Gitea-Signature: <hex>` are HMAC-SHA256 of the raw body bytes; GitLab sends the secret itself in
 * `X-Gitlab-Token`. Throws WebhookAuthError when it is missing or wrong.
 */
export function verifyDelivery(
  delivery: WebhookDelivery,
  headers: WebhookHeaders,
  rawBody: Buffer,
  secret: string,
): void {
  const name = {
    github: 'x-hub-signature-256',
    gitea: 'x-gitea-signature',
    gitlab: 'x-gitlab-token',
  }[delivery.provider];
  const given = header(headers, name)?.trim();
  if (!given) {
    throw new WebhookAuthError(
      'webhook-signature-missing',
      `${delivery.provider} webhook without its ${name} header: set the webhook's secret to FLOTILLA_WEBHOOK_SECRET`,
      name,
    );
  }
  let ok: boolean;
  switch (delivery.provider) {
    case 'github': {
      const m = /^sha256=([0-9a-fA-F]+)$/.exec(given);
      ok =
        m?.[1] !== undefined && sameBytes(Buffer.from(m[1].toLowerCase(), 'utf8'), hmacHex(secret, rawBody));
      break;
    }
    case 'gitea':
      ok = sameBytes(Buffer.from(given.toLowerCase(), 'utf8'), hmacHex(secret, rawBody));
      break;
    case 'gitlab':
      ok = sameBytes(Buffer.from(given, 'utf8'), Buffer.from(secret, 'utf8'));
      break;
  }
  if (!ok) {
    throw new WebhookAuthError(
      'webhook-signature-invalid',
      `${delivery.provider} webhook ${name} does not match FLOTILLA_WEBHOOK_SECRET: the secrets differ or the body was altered`,
      name,
    );
  }
}

/** GitHub's signature header for a body, as a sender computes it (tests and tools). */
export function githubSignature(secret: string, body: string | Buffer): string {
  return `sha256=${createHmac('sha256', secret).update(body).digest('hex')}`;
}
