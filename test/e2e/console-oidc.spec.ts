import { randomBytes } from 'node:crypto';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { GuestbookFleet } from '../support/guestbook-fleet.js';
import { hasChromium, launchChromium, seriousAccessibilityViolations } from '../support/browser.js';
import { LocalOidcIssuer, OIDC_PERSON_SHOWN_AS } from '../support/oidc-issuer.js';

/**
 * OIDC sign-in in Chromium against a tiny issuer on 127.0.0.1 (test/support/oidc-issuer.ts):
 * discovery, JWKS, an authorization endpoint that signs in one fixed person at once, and a token
 * endpoint that checks the PKCE verifier. test/e2e/console-keyboard.spec.ts signs in with it too.
 */
describe.skipIf(!hasChromium)('the web console signs in with OIDC (authorization code, PKCE)', () => {
  let e2e: GuestbookFleet;
  let browser: Browser;
  let page: Page;
  let idp: LocalOidcIssuer;

  // Chromium, a hub and agents share two cores with other work: a poll may take up to 10 s to see
  // what it waits for (it ends as soon as it does; nothing here asserts how long anything took).
  beforeAll(() => vi.setConfig({ expect: { poll: { timeout: 10_000 } } }));
  afterAll(() => vi.resetConfig());
  beforeAll(async () => {
    idp = await LocalOidcIssuer.start();
    e2e = await GuestbookFleet.start({
      name: 'console-oidc',
      clusters: 1,
      pollSeconds: 1,
      hubEnv: {
        // The fleet's own setup (clusters, agents) uses the admin token; the person uses OIDC.
        FLOTILLA_ADMIN_TOKEN: randomBytes(24).toString('hex'),
        ...idp.hubEnv(),
      },
    });
    browser = await launchChromium();
    page = await (await browser.newContext()).newPage();
  }, 180_000);
  afterAll(async () => {
    await browser?.close();
    await e2e?.stop();
    await idp?.close();
  }, 60_000);

  it('sends the person to the issuer with a S256 challenge and signs them in with the role their group maps to', async () => {
    await page.goto(`${e2e.fleet.hubUrl}/history`);
    const button = page.getByRole('button', { name: idp.buttonName });
    await expect.poll(() => button.isVisible(), { timeout: 30_000 }).toBe(true);
    expect(await seriousAccessibilityViolations(page)).toEqual([]);
    await button.click();
    await expect.poll(() => page.getByText(OIDC_PERSON_SHOWN_AS).isVisible(), { timeout: 30_000 }).toBe(true);
    // Back where the person started, with the code and state gone from the address bar.
    expect(new URL(page.url()).pathname).toBe('/history');
    expect(new URL(page.url()).search).toBe('');
    expect(idp.seen).toHaveLength(1);
    expect(idp.seen[0]).toMatchObject({
      method: 'S256',
      redirectUri: `${e2e.fleet.hubUrl}/oidc/callback`,
      scope: 'openid email groups',
    });
    expect(idp.seen[0]!.challenge).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(idp.trades).toEqual([{ ok: true }]);
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
    expect(idp.trades).toHaveLength(1); // the forged code never reached the issuer
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
