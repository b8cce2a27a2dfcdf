import { createHash, randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { exportJWK, generateKeyPair, SignJWT, type CryptoKey, type JWK } from 'jose';

export const OIDC_CLIENT_ID = 'flotilla-console';
const KID = 'idp-key-1';

/** The one person the issuer signs in, and the role the hub maps their group to. */
export const OIDC_PERSON = { sub: 'u-42', email: 'sam@example.com', groups: ['sre'] };
export const OIDC_PERSON_SHOWN_AS = 'user:sam@example.com (operator)';

/** What the issuer saw of one authorization request, to check the console did PKCE (S256). */
export interface Authorization {
  challenge: string;
  method: string;
  redirectUri: string;
  scope: string;
}

/**
 * A tiny OIDC issuer on 127.0.0.1 for browser specs: discovery, JWKS, an authorization endpoint
 * that signs in one fixed person at once (no login page), and a token endpoint that checks the PKCE
 * verifier against the challenge and hands out an ID token for the console's client.
 */
export class LocalOidcIssuer {
  /** Every authorization request, in order. */
  readonly seen: Authorization[] = [];
  /** Every code trade, in order: accepted, or why it was refused. */
  readonly trades: { ok: boolean; why?: string }[] = [];
  private readonly codes = new Map<string, Authorization>();

  private constructor(
    private readonly server: Server,
    readonly issuer: string,
    private readonly signingKey: CryptoKey,
    private readonly jwk: JWK,
  ) {}

  static async start(): Promise<LocalOidcIssuer> {
    const pair = await generateKeyPair('RS256', { extractable: true });
    const jwk: JWK = { ...(await exportJWK(pair.publicKey)), kid: KID, alg: 'RS256', use: 'sig' };
    let handle: (req: IncomingMessage, res: ServerResponse) => void = () => undefined;
    const server = createServer((req, res) => handle(req, res));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const idp = new LocalOidcIssuer(server, issuer, pair.privateKey, jwk);
    handle = (req, res) => idp.handle(req, res);
    return idp;
  }

  /** The hub's OIDC settings for this issuer: the console's client, its group `sre` an operator. */
  hubEnv(): Record<string, string> {
    return {
      FLOTILLA_OIDC_ISSUER: this.issuer,
      FLOTILLA_OIDC_AUDIENCE: OIDC_CLIENT_ID,
      FLOTILLA_OIDC_CLIENT_ID: OIDC_CLIENT_ID,
      FLOTILLA_OIDC_SCOPES: 'openid email groups',
      FLOTILLA_OIDC_ROLE_MAP: 'sre=operator',
    };
  }

  /** The sign-in button's name on the console's sign-in page. */
  get buttonName(): string {
    return `Sign in with ${new URL(this.issuer).host}`;
  }

  close(): Promise<void> {
    return new Promise((resolve) => this.server.close(() => resolve()));
  }

  private handle(req: IncomingMessage, res: ServerResponse): void {
    const url = new URL(req.url ?? '/', this.issuer);
    const json = (status: number, body: unknown) => {
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(JSON.stringify(body));
    };
    if (url.pathname === '/.well-known/openid-configuration') {
      return json(200, {
        issuer: this.issuer,
        authorization_endpoint: `${this.issuer}/authorize`,
        token_endpoint: `${this.issuer}/token`,
        jwks_uri: `${this.issuer}/jwks`,
        code_challenge_methods_supported: ['S256'],
      });
    }
    if (url.pathname === '/jwks') return json(200, { keys: [this.jwk] });
    if (url.pathname === '/authorize') return this.authorize(url.searchParams, res, json);
    if (url.pathname === '/token' && req.method === 'POST') {
      let body = '';
      req.on('data', (c: Buffer) => (body += c.toString()));
      req.on('end', () => this.trade(new URLSearchParams(body), json));
      return;
    }
    json(404, {});
  }

  private authorize(
    q: URLSearchParams,
    res: ServerResponse,
    json: (status: number, body: unknown) => void,
  ): void {
    const auth: Authorization = {
      challenge: q.get('code_challenge') ?? '',
      method: q.get('code_challenge_method') ?? '',
      redirectUri: q.get('redirect_uri') ?? '',
      scope: q.get('scope') ?? '',
    };
    this.seen.push(auth);
    if (q.get('client_id') !== OIDC_CLIENT_ID || q.get('response_type') !== 'code')
      return json(400, { error: 'invalid_request' });
    const code = randomBytes(12).toString('hex');
    this.codes.set(code, auth);
    const back = new URL(auth.redirectUri);
    back.searchParams.set('code', code);
    back.searchParams.set('state', q.get('state') ?? '');
    res.writeHead(302, { location: back.toString() });
    res.end();
  }

  private trade(form: URLSearchParams, json: (status: number, body: unknown) => void): void {
    const auth = this.codes.get(form.get('code') ?? '');
    this.codes.delete(form.get('code') ?? ''); // a code is good for one trade
    const verifier = form.get('code_verifier') ?? '';
    const why = !auth
      ? 'unknown or used code'
      : createHash('sha256').update(verifier).digest('base64url') !== auth.challenge
        ? 'code_verifier does not match the challenge'
        : form.get('redirect_uri') !== auth.redirectUri
          ? 'redirect_uri differs'
          : form.get('client_id') !== OIDC_CLIENT_ID
            ? 'client_id differs'
            : null;
    this.trades.push(why ? { ok: false, why } : { ok: true });
    if (why) return json(400, { error: 'invalid_grant', error_description: why });
    void this.idToken().then((id_token) =>
      json(200, { access_token: 'opaque-access', id_token, token_type: 'Bearer', expires_in: 600 }),
    );
  }

  private idToken(): Promise<string> {
    return new SignJWT({ ...OIDC_PERSON })
      .setProtectedHeader({ alg: 'RS256', kid: KID })
      .setIssuer(this.issuer)
      .setAudience(OIDC_CLIENT_ID)
      .setSubject(OIDC_PERSON.sub)
      .setIssuedAt()
      .setExpirationTime('10m')
      .sign(this.signingKey);
  }
}
