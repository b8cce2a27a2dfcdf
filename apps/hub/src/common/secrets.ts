import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';

/**
 * A fresh secret with a readable prefix saying what it is: `flb_` bootstrap token, `fla_` agent
 * credential, `flp_` people API token.
 */
export function newSecret(prefix: 'flb' | 'fla' | 'flp'): string {
  return `${prefix}_${randomBytes(32).toString('base64url')}`;
}

/** Only this is stored; secrets have 256 bits of entropy, so a plain sha256 is enough. */
export function hashSecret(secret: string): string {
  return createHash('sha256').update(secret).digest('hex');
}

export function sameSecret(a: string, b: string): boolean {
  const x = Buffer.from(hashSecret(a));
  const y = Buffer.from(hashSecret(b));
  return timingSafeEqual(x, y);
}

export function bearerToken(header: string | undefined): string | null {
  const m = /^Bearer\s+(\S+)\s*$/i.exec(header ?? '');
  return m?.[1] ?? null;
}
