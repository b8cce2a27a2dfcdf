import type { OidcSignInView, OidcTokenView } from '@flotilla/contract';
import { api } from './api.js';

/**
 * OIDC sign-in with the authorization code flow and PKCE (RFC 7636), the console being a public
 * client: the verifier never leaves this tab until the hub trades the code with it, and `state`
 * ties the answer to the request this tab made. Both wait in sessionStorage across the redirect.
 */
const PENDING_KEY = 'flotilla.oidc';
export const CALLBACK_PATH = '/oidc/callback';

interface Pending {
  state: string;
  verifier: string;
  /** Where the person was when they signed in, to go back to. */
  returnTo: string;
}

function base64url(bytes: Uint8Array): string {
  let s = '';
  for (const b of bytes) s += String.fromCharCode(b);
  return btoa(s).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
}

const random = (n: number) => base64url(crypto.getRandomValues(new Uint8Array(n)));
const redirectUri = () => `${location.origin}${CALLBACK_PATH}`;

/** Sends the browser to the issuer; it comes back to CALLBACK_PATH with a code. */
export async function startOidcSignIn(config: OidcSignInView): Promise<void> {
  const verifier = random(32);
  const challenge = base64url(
    new Uint8Array(await crypto.subtle.digest('SHA-256', new TextEncoder().encode(verifier))),
  );
  const pending: Pending = { state: random(16), verifier, returnTo: location.pathname + location.search };
  sessionStorage.setItem(PENDING_KEY, JSON.stringify(pending));
  const url = new URL(config.authorizationEndpoint);
  url.search = new URLSearchParams({
    response_type: 'code',
    client_id: config.clientId,
    redirect_uri: redirectUri(),
    scope: config.scopes,
    state: pending.state,
    code_challenge: challenge,
    code_challenge_method: 'S256',
  }).toString();
  location.assign(url.toString());
}

let finishing: Promise<{ token: OidcTokenView; returnTo: string }> | null = null;

/**
 * On CALLBACK_PATH: checks `state`, has the hub trade the code, and says where to go back to. Once
 * per page load (a code is good for one trade), whoever asks again gets the same answer.
 */
export function finishOidcSignIn(): Promise<{ token: OidcTokenView; returnTo: string }> {
  finishing ??= tradeCode();
  return finishing;
}

async function tradeCode(): Promise<{ token: OidcTokenView; returnTo: string }> {
  const params = new URLSearchParams(location.search);
  const raw = sessionStorage.getItem(PENDING_KEY);
  sessionStorage.removeItem(PENDING_KEY);
  const pending = raw ? (JSON.parse(raw) as Pending) : null;
  const error = params.get('error');
  if (error) throw new Error(`the issuer refused the sign-in: ${params.get('error_description') ?? error}`);
  if (!pending) throw new Error('no sign-in was started in this tab; start it again');
  if (params.get('state') !== pending.state)
    throw new Error(
      'the answer does not belong to the sign-in this tab started (state differs); start again',
    );
  const code = params.get('code');
  if (!code) throw new Error('the issuer sent no code back');
  const token = await api<OidcTokenView>('POST', '/api/v1/auth/oidc/token', {
    code,
    codeVerifier: pending.verifier,
    redirectUri: redirectUri(),
  });
  return { token, returnTo: pending.returnTo.startsWith('/') ? pending.returnTo : '/' };
}
