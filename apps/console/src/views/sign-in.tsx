import type { OidcSignInView } from '@flotilla/contract';
import { useQuery } from '@tanstack/react-query';
import { useEffect, useRef, useState, type FormEvent } from 'react';
import { ApiError, get } from '../api.js';
import { startOidcSignIn } from '../oidc.js';
import { ErrorNote, Field } from '../parts.js';

/** The hub's OIDC sign-in, or null when it has none (404). */
function useOidc() {
  return useQuery({
    queryKey: ['oidc-sign-in'],
    staleTime: Infinity,
    queryFn: async () => {
      try {
        return await get<OidcSignInView>('/api/v1/auth/oidc');
      } catch (e) {
        if (e instanceof ApiError && e.status === 404) return null;
        throw e;
      }
    },
  });
}

/** Sign-in with an API token (`flotilla tokens create`); it is checked against the hub before it is kept. */
export function SignIn({
  afterSignOut,
  onSignedIn,
}: {
  /** The person signed out a moment ago: the Sign out button had focus, and it is gone. */
  afterSignOut: boolean;
  onSignedIn: (token: string) => void;
}) {
  const heading = useRef<HTMLHeadingElement>(null);
  useEffect(() => {
    if (afterSignOut) heading.current?.focus();
  }, [afterSignOut]);
  const [token, setToken] = useState('');
  const [error, setError] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);
  const oidc = useOidc();
  const submit = async (e: FormEvent) => {
    e.preventDefault();
    setBusy(true);
    setError(null);
    try {
      const res = await fetch('/api/v1/session', {
        headers: { Authorization: `Bearer ${token.trim()}` },
      });
      if (res.status === 401) throw new ApiError(401, 'unauthorized', 'the hub does not accept this token');
      if (!res.ok) throw new ApiError(res.status, `http-${res.status}`, `the hub answered ${res.status}`);
      onSignedIn(token.trim());
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  };
  return (
    <main id="main" className="sign-in">
      {/* Focusable from script only: where focus goes after signing out. */}
      <h1 tabIndex={-1} ref={heading}>
        Sign in to Flotilla
      </h1>
      {oidc.data && (
        <p>
          <button type="button" onClick={() => void startOidcSignIn(oidc.data!).catch(setError)}>
            Sign in with {new URL(oidc.data.issuer).host}
          </button>
        </p>
      )}
      <form onSubmit={(e) => void submit(e)}>
        <Field label="API token" hint="An admin token or a token from `flotilla tokens create`.">
          {(id, hint) => (
            <input
              id={id}
              aria-describedby={hint}
              type="password"
              autoComplete="off"
              required
              value={token}
              onChange={(e) => setToken(e.target.value)}
            />
          )}
        </Field>
        <button type="submit" disabled={busy || token.trim() === ''}>
          Sign in
        </button>
        <ErrorNote error={error} />
      </form>
    </main>
  );
}
