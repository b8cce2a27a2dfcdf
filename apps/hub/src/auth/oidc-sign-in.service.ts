import { Inject, Injectable } from '@nestjs/common';
import { decodeJwt } from 'jose';
import { z } from 'zod';
import type { OidcSignInView, OidcTokenView } from '@flotilla/contract';
import { HUB_CONFIG, type HubConfig, type OidcConfig } from '../config/hub-config.js';
import { HubError, parseInput } from '../common/hub-error.js';
import { OidcVerifier } from './oidc-verifier.js';

export const tokenRequest = z.strictObject({
  code: z.string().min(1, 'the code the issuer sent back to /oidc/callback').max(4096),
  /** RFC 7636: 43–128 characters of [A-Za-z0-9-._~]. */
  codeVerifier: z
    .string()
    .regex(/^[A-Za-z0-9._~-]{43,128}$/, 'a PKCE code verifier: 43 to 128 characters of A-Z a-z 0-9 - . _ ~'),
  redirectUri: z.url(),
});

/**
 * The console's OIDC sign-in (authorization code with PKCE, a public client): says where to send
 * the person, and trades the code the issuer returns for a token. The trade goes through the hub so
 * the console's CSP can stay `connect-src 'self'` and the issuer needs no CORS; the hub holds no
 * client secret, and answers only with a token it would itself accept as a bearer.
 */
@Injectable()
export class OidcSignIn {
  private readonly oidc: (OidcConfig & { clientId: string }) | null;
  private readonly verifier: OidcVerifier | null;

  constructor(@Inject(HUB_CONFIG) config: HubConfig) {
    const oidc = config.auth.oidc;
    this.oidc = oidc?.clientId ? { ...oidc, clientId: oidc.clientId } : null;
    this.verifier = this.oidc ? new OidcVerifier(this.oidc) : null;
  }

  async config(): Promise<OidcSignInView> {
    const { oidc, verifier } = this.enabled();
    return {
      issuer: oidc.issuer,
      clientId: oidc.clientId,
      authorizationEndpoint: await endpoint(verifier, 'authorization_endpoint'),
      scopes: oidc.scopes,
    };
  }

  async exchange(body: unknown): Promise<OidcTokenView> {
    const { oidc, verifier } = this.enabled();
    const input = parseInput(tokenRequest, body);
    const tokenEndpoint = await endpoint(verifier, 'token_endpoint');
    let res: Response;
    try {
      res = await fetch(tokenEndpoint, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' },
        body: new URLSearchParams({
          grant_type: 'authorization_code',
          code: input.code,
          redirect_uri: input.redirectUri,
          client_id: oidc.clientId,
          code_verifier: input.codeVerifier,
        }),
        signal: AbortSignal.timeout(10_000),
      });
    } catch (e) {
      throw new HubError(503, 'oidc-unavailable', `cannot reach ${tokenEndpoint}: ${(e as Error).message}`);
    }
    const answer = (await res.json().catch(() => ({}))) as Record<string, unknown>;
    if (!res.ok) {
      const why = [answer['error'], answer['error_description']].filter((x) => typeof x === 'string');
      throw new HubError(
        401,
        'oidc-code-refused',
        `the issuer refused the sign-in code (${res.status}${why.length ? `: ${why.join(': ')}` : ''}); sign in again`,
      );
    }
    // Whichever of its tokens the hub accepts (the audience decides): the access token when it is
    // a JWT for this hub, else the ID token (whose audience is the client).
    const candidates = [answer['access_token'], answer['id_token']].filter(
      (t): t is string => typeof t === 'string' && t.split('.').length === 3,
    );
    let refusal: unknown = new HubError(401, 'oidc-no-token', 'the issuer answered without a JWT');
    for (const token of candidates) {
      try {
        const who = await verifier.verify(token);
        const exp = decodeJwt(token).exp;
        return {
          token,
          subject: who.subject,
          role: who.role,
          expiresAt: typeof exp === 'number' ? new Date(exp * 1000).toISOString() : null,
        };
      } catch (e) {
        refusal = e;
      }
    }
    throw refusal;
  }

  private enabled(): { oidc: OidcConfig & { clientId: string }; verifier: OidcVerifier } {
    if (!this.oidc || !this.verifier)
      throw new HubError(
        404,
        'oidc-sign-in-off',
        'this hub offers no OIDC sign-in (FLOTILLA_OIDC_ISSUER and FLOTILLA_OIDC_CLIENT_ID)',
      );
    return { oidc: this.oidc, verifier: this.verifier };
  }
}

async function endpoint(verifier: OidcVerifier, key: 'authorization_endpoint' | 'token_endpoint') {
  const value = (await verifier.discovery())[key];
  if (typeof value !== 'string' || !/^https?:\/\//.test(value))
    throw new HubError(503, 'oidc-unavailable', `the issuer's discovery document has no ${key}`);
  return value;
}
