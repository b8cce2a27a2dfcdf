import { createHmac } from 'node:crypto';

/**
 * The generic webhook's signature, GitHub's scheme with a timestamp bound in (as Slack and Stripe
 * do), so a captured request cannot be replayed later: `X-Flotilla-Signature: sha256=<hex>` is the
 * HMAC-SHA256, keyed with the destination's secret, of `<X-Flotilla-Timestamp>.<raw body>`.
 */
export function webhookSignature(secret: string, timestamp: number, body: string): string {
  return `sha256=${createHmac('sha256', secret).update(`${timestamp}.${body}`).digest('hex')}`;
}
