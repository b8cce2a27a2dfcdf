import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { exportJWK, generateKeyPair, SignJWT, type CryptoKey, type JWK } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestHub } from '@flotilla/hub/testing';
import { caller, sql, startSecureHub, tableCounts, type Refusal } from './security-hub.js';

// OIDC bearer tokens against a real identity-provider stand-in: an HTTP server on 127.0.0.1 that
// publishes a discovery document and a JWKS, and tokens signed with jose in the test.

const AUDIENCE = 'flotilla-hub';
const KID = 'test-key-1';

let idp: Server;
let issuer: string;
let signingKey: CryptoKey;
let impostorKey: CryptoKey;
let hub: TestHub;
let call: ReturnType<typeof caller>;

async function token(
  claims: { sub: string; email?: string; groups?: string[] },
  opts: { key?: CryptoKey; issuer?: string; audience?: string; expiresIn?: string | number } = {},
): Promise<string> {
  return new SignJWT(claims)
    .setProtectedHeader({ alg: 'RS256', kid: KID })
    .setIssuer(opts.issuer ?? issuer)
    .setAudience(opts.audience ?? AUDIENCE)
    .setSubject(claims.sub)
    .setIssuedAt()
    .setExpirationTime(opts.expiresIn ?? '5m')
    .sign(opts.key ?? signingKey);
}

describe('OIDC bearer tokens', () => {
  beforeAll(async () => {
    // The IdP publishes the public half of `pair`; tokens are signed with its private half, and
    // the impostor's key is one the IdP never published.
    const pair = await generateKeyPair('RS256', { extractable: true });
    signingKey = pair.privateKey;
    ({ privateKey: impostorKey } = await generateKeyPair('RS256'));
    const jwk: JWK = { ...(await exportJWK(pair.publicKey)), kid: KID, alg: 'RS256', use: 'sig' };
    idp = createServer((req, res) => {
      res.setHeader('content-type', 'application/json');
      if (req.url === '/.well-known/openid-configuration') {
        res.end(JSON.stringify({ issuer, jwks_uri: `${issuer}/jwks` }));
      } else if (req.url === '/jwks') {
        res.end(JSON.stringify({ keys: [jwk] }));
      } else {
        res.statusCode = 404;
        res.end('{}');
      }
    });
    await new Promise<void>((resolve) => idp.listen(0, '127.0.0.1', resolve));
    issuer = `http://127.0.0.1:${(idp.address() as AddressInfo).port}`;
    // No FLOTILLA_OIDC_JWKS_URL: the hub finds the keys through the discovery document.
    hub = await startSecureHub({
      FLOTILLA_OIDC_ISSUER: issuer,
      FLOTILLA_OIDC_AUDIENCE: AUDIENCE,
      FLOTILLA_OIDC_ROLE_MAP: 'readers=viewer,sre=operator,platform=admin',
    });
    call = caller(hub);
  }, 120_000);

  afterAll(async () => {
    await hub?.close();
    await new Promise((resolve) => idp?.close(resolve));
  }, 60_000);

  it('accepts a valid token, takes the highest role its groups map to, and audits its email', async () => {
    const viewer = await token({ sub: 'u-1', email: 'vera@example.com', groups: ['readers'] });
    expect((await call('GET', '/api/v1/clusters', { token: viewer })).status).toBe(200);
    const admin = await token({ sub: 'u-2', email: 'pat@example.com', groups: ['readers', 'platform'] });
    const created = await call('POST', '/api/v1/clusters', { body: { name: 'oidc-made' }, token: admin });
    expect(created.status).toBe(201);
    const audit = await sql(hub, `SELECT actor FROM "AuditEvent" WHERE scope = 'cluster:oidc-made'`);
    expect(audit).toEqual([{ actor: 'user:pat@example.com' }]);
  });

  it('refuses a viewer who tries to change something (403), and changes nothing', async () => {
    const viewer = await token({ sub: 'u-1', email: 'vera@example.com', groups: ['readers'] });
    const before = await tableCounts(hub);
    const r = await call<Refusal>('POST', '/api/v1/clusters', { body: { name: 'nope' }, token: viewer });
    expect(r.status).toBe(403);
    expect(r.body.message).toBe(
      'user:vera@example.com has the viewer role; POST /api/v1/clusters needs admin',
    );
    expect(await tableCounts(hub)).toEqual(before);
  });

  it('refuses expired, wrong-issuer, wrong-audience, badly signed and role-less tokens, changing nothing', async () => {
    const claims = { sub: 'u-3', email: 'sam@example.com', groups: ['platform'] };
    const cases: [string, string, number, string, RegExp][] = [
      [
        'expired',
        await token(claims, { expiresIn: Math.floor(Date.now() / 1000) - 120 }),
        401,
        'token-expired',
        /^the OIDC token expired at \d{4}-/,
      ],
      [
        'wrong issuer',
        await token(claims, { issuer: 'https://evil.example.com' }),
        401,
        'token-invalid',
        /^the OIDC token was issued by "https:\/\/evil\.example\.com"; this hub trusts http:\/\/127\.0\.0\.1:\d+$/,
      ],
      [
        'wrong audience',
        await token(claims, { audience: 'some-other-app' }),
        401,
        'token-invalid',
        /^the OIDC token is for audience "some-other-app", not flotilla-hub$/,
      ],
      [
        'bad signature',
        await token(claims, { key: impostorKey }),
        401,
        'token-invalid',
        /^the OIDC token's signature does not verify with http:\/\/127\.0\.0\.1:\d+'s keys$/,
      ],
      [
        'no mapped group',
        await token({ sub: 'u-4', email: 'eve@example.com', groups: ['contractors'] }),
        403,
        'no-role',
        /^eve@example\.com has no Flotilla role: none of the token's "groups" \(contractors\) is in FLOTILLA_OIDC_ROLE_MAP$/,
      ],
    ];
    const before = await tableCounts(hub);
    for (const [what, jwt, status, code, message] of cases) {
      const r = await call<Refusal>('POST', '/api/v1/clusters', { body: { name: 'by-oidc' }, token: jwt });
      expect(r.status, what).toBe(status);
      expect(r.body.code, what).toBe(code);
      expect(r.body.message, what).toMatch(message);
    }
    // A tampered payload under a genuine signature is a bad signature too.
    const genuine = await token({ sub: 'u-5', email: 'vera@example.com', groups: ['readers'] });
    const [h, , s] = genuine.split('.');
    const forgedPayload = Buffer.from(
      JSON.stringify({ sub: 'u-5', groups: ['platform'], iss: issuer, aud: AUDIENCE, exp: 9_999_999_999 }),
    ).toString('base64url');
    const forged = await call<Refusal>('POST', '/api/v1/clusters', {
      body: { name: 'by-oidc' },
      token: `${h}.${forgedPayload}.${s}`,
    });
    expect(forged.status).toBe(401);
    expect(forged.body.code).toBe('token-invalid');
    expect(await tableCounts(hub)).toEqual(before);
  });
});
