import { createRemoteJWKSet, errors, jwtVerify, type JWTPayload, type JWTVerifyGetKey } from 'jose';
import type { OidcConfig, PeopleRole } from '../config/hub-config.js';
import { HubError } from '../common/hub-error.js';
import { highestMappedRole } from './role-policy.js';

/** How long a fetched JWKS is trusted before a token with an unknown `kid` may fetch it again. */
const JWKS_COOLDOWN_MS = 30_000;

export interface OidcIdentity {
  /** `email` when the token has one (what a person recognises in the audit log), else `sub`. */
  subject: string;
  role: PeopleRole;
}

/**
 * Verifies OIDC bearer JWTs against the configured issuer: signature by the issuer's published keys
 * (fetched and cached by jose), `iss`, `aud` and `exp`/`nbf`; the role comes from a claim (the
 * groups) through the configured group → role map.
 */
export class OidcVerifier {
  private keys: Promise<JWTVerifyGetKey> | null = null;

  constructor(private readonly config: OidcConfig) {}

  async verify(token: string): Promise<OidcIdentity> {
    let payload: JWTPayload;
    try {
      ({ payload } = await jwtVerify(token, await this.keySet(), {
        issuer: this.config.issuer,
        audience: this.config.audience,
        clockTolerance: 30,
      }));
    } catch (e) {
      throw refusal(e, this.config);
    }
    const subject =
      typeof payload['email'] === 'string'
        ? payload['email']
        : typeof payload.sub === 'string'
          ? payload.sub
          : '';
    if (!subject) throw new HubError(401, 'token-invalid', 'the OIDC token names no subject ("sub")');
    const claim = payload[this.config.roleClaim];
    const groups = Array.isArray(claim)
      ? claim.filter((g): g is string => typeof g === 'string')
      : typeof claim === 'string'
        ? [claim]
        : [];
    const role = highestMappedRole(groups, this.config.roleMap);
    if (!role) {
      throw new HubError(
        403,
        'no-role',
        `${subject} has no Flotilla role: none of the token's "${this.config.roleClaim}" (${groups.join(', ') || 'none'}) is in FLOTILLA_OIDC_ROLE_MAP`,
      );
    }
    return { subject, role };
  }

  /** The issuer's key set, from FLOTILLA_OIDC_JWKS_URL or its discovery document, looked up once. */
  private keySet(): Promise<JWTVerifyGetKey> {
    this.keys ??= this.jwksUrl().then((url) =>
      createRemoteJWKSet(new URL(url), { cooldownDuration: JWKS_COOLDOWN_MS, timeoutDuration: 5_000 }),
    );
    // A failed discovery is retried by the next request instead of being remembered.
    void this.keys.catch(() => (this.keys = null));
    return this.keys;
  }

  private async jwksUrl(): Promise<string> {
    if (this.config.jwksUrl) return this.config.jwksUrl;
    const jwksUri = (await this.discovery()).jwks_uri;
    if (typeof jwksUri !== 'string') {
      throw new HubError(503, 'oidc-unavailable', `${this.discoveryUrl()} has no jwks_uri`);
    }
    return jwksUri;
  }

  private discoveryUrl(): string {
    return `${this.config.issuer.replace(/\/$/, '')}/.well-known/openid-configuration`;
  }

  /** The issuer's discovery document (`/.well-known/openid-configuration`), read afresh. */
  async discovery(): Promise<Record<string, unknown>> {
    const url = this.discoveryUrl();
    try {
      const res = await fetch(url, { signal: AbortSignal.timeout(5_000) });
      if (!res.ok) throw new Error(`HTTP ${res.status}`);
      const doc: unknown = await res.json();
      if (!doc || typeof doc !== 'object') throw new Error('not a JSON object');
      return doc as Record<string, unknown>;
    } catch (e) {
      throw new HubError(503, 'oidc-unavailable', `cannot read ${url}: ${(e as Error).message}`);
    }
  }
}

/** jose's error → a 401 that says what was wrong with the token (never the token itself). */
function refusal(e: unknown, config: OidcConfig): HubError {
  if (e instanceof HubError) return e;
  if (e instanceof errors.JWTExpired) {
    const exp = typeof e.payload.exp === 'number' ? new Date(e.payload.exp * 1000).toISOString() : 'unknown';
    return new HubError(401, 'token-expired', `the OIDC token expired at ${exp}`);
  }
  if (e instanceof errors.JWTClaimValidationFailed) {
    if (e.claim === 'iss') {
      return new HubError(
        401,
        'token-invalid',
        `the OIDC token was issued by ${JSON.stringify(e.payload.iss ?? null)}; this hub trusts ${config.issuer}`,
      );
    }
    if (e.claim === 'aud') {
      return new HubError(
        401,
        'token-invalid',
        `the OIDC token is for audience ${JSON.stringify(e.payload.aud ?? null)}, not ${config.audience}`,
      );
    }
    return new HubError(
      401,
      'token-invalid',
      `the OIDC token's "${e.claim}" claim is not acceptable: ${e.reason}`,
    );
  }
  if (e instanceof errors.JWSSignatureVerificationFailed || e instanceof errors.JWKSNoMatchingKey) {
    return new HubError(
      401,
      'token-invalid',
      `the OIDC token's signature does not verify with ${config.issuer}'s keys`,
    );
  }
  if (e instanceof errors.JWKSTimeout || (e instanceof errors.JOSEError && e.code === 'ERR_JOSE_GENERIC')) {
    return new HubError(503, 'oidc-unavailable', `cannot fetch the keys of ${config.issuer}: ${e.message}`);
  }
  if (e instanceof errors.JOSEError) {
    return new HubError(401, 'token-invalid', `the OIDC token is not acceptable: ${e.message}`);
  }
  return new HubError(503, 'oidc-unavailable', `cannot verify the OIDC token: ${(e as Error).message}`);
}
