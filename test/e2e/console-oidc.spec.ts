import { createHash, randomBytes } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { exportJWK, generateKeyPair, SignJWT, type CryptoKey, type JWK } from 'jose';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { GuestbookFleet } from '../support/guestbook-fleet.js';
import { hasChromium, launchChromium, seriousAccessibilityViolations } from '../support/browser.js';

const CLIENT_ID = 'flotilla-console';
const KID = 'idp-key-1';

/** What the issuer saw of one authorization request, to check the console did PKCE (S256). */
interface Authorization {
  challenge: string;
  method: string;
  redirectUri: string;
  scope: string;
}

/**
 * OIDC sign-in in Chromium against a tiny issuer on 127.0.0.1: discovery, JWKS, an authorization
 * endpoint that signs in one fixed person at once (no login page), and a token endpoint that checks
 * the PKCE verifier against the challenge and hands out an ID token for the console's client.
 */
describe.skipIf(!hasChromium)('the web console signs in with OIDC (authorization code, PKCE)', () => {
  let e2e: GuestbookFleet;
  let browser: Browser;
  let page: Page;
  let idp: Server;
  let issuer = '';
  let signingKey: CryptoKey;
  const codes = new Map<string, Authorization>();
  const seen: Authorization[] = [];
  const trades: { ok: boolean; why?: string }[] = [];

  const idToken = (nonceFree: { sub: string; email: string; groups: string[] }) =>
    new SignJWT(nonceFree)
      .setProtectedHeader({ alg: 'RS256', kid: KID })
      .setIssuer(issuer)
      .setAudience(CLIENT_ID)
      .setSubject(nonceFree.sub)
      .setIssuedAt()
      .setExpirationTime('10m')
      .sign(signingKey);

  // Chromium, a hub and agents share two cores with other work: a poll may take up to 10 s to see
  // what it waits for (it ends as soon as it does; nothing here asserts how long anything took).
  beforeAll(() => vi.setConfig({ expect: { poll: { timeout: 10_000 } } }));
  afterAll(() => vi.resetConfig());
  beforeAll(async () => {
    const pair = await generateKeyPair('RS256', { extractable: true });
    signingKey = pair.privateKey;
    const jwk: JWK = { ...(await exportJWK(pair.publicKey)), kid: KID, alg: 'RS256', use: 'sig' };
    idp = createServer((req, res) => {
      const url = new URL(req.url ?? '/', issuer);
      const json = (status: number, body: unknown) => {
        res.writeHead(status, { 'content-type': 'application/json' });
        res.end(JSON.stringify(body));
      };
      if (url.pathname === '/.well-known/openid-configuration') {
        return json(200, {
          issuer,
          authorization_endpoint: `${issuer}/authorize`,
          token_endpoint: `${issuer}/token`,
          jwks_uri: `${issuer}/jwks`,
          code_challenge_methods_supported: ['S256'],
        });
      }
      if (url.pathname === '/jwks') return json(200, { keys: [jwk] });
      if (url.pathname === '/authorize') {
        const q = url.searchParams;
        const auth: Authorization = {
          challenge: q.get('code_challenge') ?? '',
          method: q.get('code_challenge_method') ?? '',
          redirectUri: q.get('redirect_uri') ?? '',
          scope: q.get('scope') ?? '',
        };
        seen.push(auth);
        if (q.get('client_id') !== CLIENT_ID || q.get('response_type') !== 'code')
          return json(400, { error: 'invalid_request' });
        const code = randomBytes(12).toString('hex');
        codes.set(code, auth);
        const back = new URL(auth.redirectUri);
        back.searchParams.set('code', code);
        back.searchParams.set('state', q.get('state') ?? '');
        res.writeHead(302, { location: back.toString() });
        return res.end();
      }
      if (url.pathname === '/token' && req.method === 'POST') {
        let body = '';
        req.on('data', (c: Buffer) => (body += c.toString()));
        req.on('end', () => {
          const form = new URLSearchParams(body);
          const auth = codes.get(form.get('code') ?? '');
          codes.delete(form.get('code') ?? ''); // a code is good for one trade
          const verifier = form.get('code_verifier') ?? '';
          const why = !auth
            ? 'unknown or used code'
            : createHash('sha256').update(verifier).digest('base64url') !== auth.challenge
              ? 'code_verifier does not match the challenge'
              : form.get('redirect_uri') !== auth.redirectUri
                ? 'redirect_uri differs'
                : form.get('client_id') !== CLIENT_ID
                  ? 'client_id differs'
                  : null;
          trades.push(why ? { ok: false, why } : { ok: true });
          if (why) return json(400, { error: 'invalid_grant', error_description: why });
          void idToken({ sub: 'u-42', email: 'sam@example.com', groups: ['sre'] }).then((id_token) =>
            json(200, { access_token: 'opaque-access', id_token, token_type: 'Bearer', expires_in: 600 }),
          );
        });
        return;
      }
      json(404, {});
    });
    await new Promise<void>((resolve) => idp.listen(0, '127.0.0.1', resolve));
    issuer = `http://127.0.0.1:${(idp.address() as AddressInfo).port}`;
    e2e = await GuestbookFleet.start({
      name: 'console-oidc',
      clusters: 1,
      pollSeconds: 1,
      hubEnv: {
        // The fleet's own setup (clusters, agents) uses the admin token; the person uses OIDC.
        FLOTILLA_ADMIN_TOKEN: randomBytes(24).toString('hex'),
        FLOTILLA_OIDC_ISSUER: issuer,
        FLOTILLA_OIDC_AUDIENCE: CLIENT_ID,
        FLOTILLA_OIDC_CLIENT_ID: CLIENT_ID,
        FLOTILLA_OIDC_SCOPES: 'openid email groups',
        FLOTILLA_OIDC_ROLE_MAP: 'sre=operator',
      },
    });
    browser = await launchChromium();
    page = await (await browser.newContext()).newPage();
  }, 180_000);
  afterAll(async () => {
    await browser?.close();
    await e2e?.stop();
    await new Promise((resolve) => idp?.close(resolve));
  }, 60_000);

  it('sends the person to the issuer with a S256 challenge and signs them in with the role their group maps to', async () => {
    await page.goto(`${e2e.fleet.hubUrl}/history`);
    const button = page.getByRole('button', { name: `Sign in with ${new URL(issuer).host}` });
    await expect.poll(() => button.isVisible(), { timeout: 30_000 }).toBe(true);
    expect(await seriousAccessibilityViolations(page)).toEqual([]);
    await button.click();
    await expect
      .poll(() => page.getByText('user:sam@example.com (operator)').isVisible(), { timeout: 30_000 })
      .toBe(true);
    // Back where the person started, with the code and state gone from the address bar.
    expect(new URL(page.url()).pathname).toBe('/history');
    expect(new URL(page.url()).search).toBe('');
    expect(seen).toHaveLength(1);
    expect(seen[0]).toMatchObject({
      method: 'S256',
      redirectUri: `${e2e.fleet.hubUrl}/oidc/callback`,
      scope: 'openid email groups',
    });
    expect(seen[0]!.challenge).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(trades).toEqual([{ ok: true }]);
    // The token is the issuer's, checked by the hub on every call the views make.
    await page.getByRole('link', { name: 'Fleet' }).click();
    await expect
      .poll(() => page.getByTestId('fleet-counts').textContent(), { timeout: 30_000 })
      .toMatch(/^1 clusters/);
  }, 90_000);

  it('refuses an answer that does not belong to the sign-in this tab started', async () => {
    await page.goto(`${e2e.fleet.hubUrl}/oidc/callback?code=forged&state=not-mine`);
    await expect
      .poll(() => page.getByRole('alert').textContent())
      .toMatch(/no sign-in was started in this tab|state differs/);
    expect(trades).toHaveLength(1); // the forged code never reached the issuer
  }, 30_000);

  it('shows the issuer refusing the code (a used one), and keeps nobody signed in', async () => {
    const res = await fetch(`${e2e.fleet.hubUrl}/api/v1/auth/oidc/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        code: 'used-or-unknown',
        codeVerifier: 'a'.repeat(43),
        redirectUri: `${e2e.fleet.hubUrl}/oidc/callback`,
      }),
    });
    expect(res.status).toBe(401);
    expect(await res.json()).toMatchObject({
      code: 'oidc-code-refused',
      message: expect.stringContaining('unknown or used code') as string,
    });
    const bad = await fetch(`${e2e.fleet.hubUrl}/api/v1/auth/oidc/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ code: 'x', codeVerifier: 'short', redirectUri: 'not a url' }),
    });
    expect(bad.status).toBe(400);
    expect(await bad.json()).toMatchObject({ path: 'codeVerifier' });
  }, 30_000);
});
