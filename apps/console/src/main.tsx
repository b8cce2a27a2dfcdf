import type { SessionView } from '@flotilla/contract';
import { QueryClient, QueryClientProvider, useQuery, useQueryClient } from '@tanstack/react-query';
import { StrictMode, useEffect, useRef, useState } from 'react';
import { createRoot } from 'react-dom/client';
import { Link, Route, Switch, useLocation, useRoute } from 'wouter';
import { ApiError, get, storeToken } from './api.js';
import { followFleetEvents, type LiveState } from './live.js';
import { CALLBACK_PATH, finishOidcSignIn } from './oidc.js';
import { ErrorNote } from './parts.js';
import { SessionContext } from './session.js';
import { AppSetView } from './views/appset-view.js';
import { AppSetsView } from './views/appsets-view.js';
import { AuditView } from './views/audit-view.js';
import { BreakGlassView } from './views/break-glass-view.js';
import { FleetMatrix, prefetchFleetPage } from './views/fleet-matrix.js';
import { HistoryView } from './views/history-view.js';
import { SignIn } from './views/sign-in.js';
import { TargetView } from './views/target-view.js';
import { WindowsView } from './views/windows-view.js';
import './styles.css';

const queryClient = new QueryClient({
  defaultOptions: {
    queries: {
      // Live events say when to refetch; polling stays as a slow safety net.
      staleTime: 5_000,
      refetchInterval: 60_000,
      retry: (count, error) => !(error instanceof ApiError && error.status < 500) && count < 2,
    },
  },
});

function NavLink({ href, children }: { href: string; children: string }) {
  const [active] = useRoute(href === '/' ? '/' : `${href}/*?`);
  return (
    <Link href={href} aria-current={active ? 'page' : undefined}>
      {children}
    </Link>
  );
}

/**
 * On a change of view, focus goes to the new view's content: the link that was followed may be gone
 * (a fleet cell), and keyboard and screen-reader users start reading where the view starts. So it
 * does on the first view after a sign-in (`signedInNow`): the sign-in form that had focus is gone.
 */
function useFocusOnViewChange(signedInNow: boolean) {
  const mainRef = useRef<HTMLElement>(null);
  const [path] = useLocation();
  const shown = useRef(signedInNow ? null : path);
  useEffect(() => {
    if (shown.current === path) return;
    shown.current = path;
    mainRef.current?.focus();
  }, [path]);
  return mainRef;
}

function Shell({
  session,
  signedInNow,
  onSignOut,
}: {
  session: SessionView;
  /** The person signed in in this page a moment ago (not a reload with a kept token). */
  signedInNow: boolean;
  onSignOut: () => void;
}) {
  const client = useQueryClient();
  const [live, setLive] = useState<LiveState>('connecting');
  useEffect(() => followFleetEvents(client, setLive), [client]);
  const mainRef = useFocusOnViewChange(signedInNow);
  return (
    <SessionContext.Provider value={session}>
      <a className="skip" href="#main">
        Skip to content
      </a>
      <header className="top">
        <span className="brand">Flotilla</span>
        <nav aria-label="Views">
          <NavLink href="/">Fleet</NavLink>
          <NavLink href="/appsets">ApplicationSets</NavLink>
          <NavLink href="/history">History</NavLink>
          <NavLink href="/audit">Audit</NavLink>
          <NavLink href="/windows">Windows</NavLink>
          <NavLink href="/break-glass">Break-glass</NavLink>
        </nav>
        <span className={`live ${live}`} role="status" aria-live="polite">
          {live === 'live' ? 'Live' : live === 'connecting' ? 'Connecting…' : 'Reconnecting…'}
        </span>
        <span className="who">
          {session.subject} ({session.role}){session.open ? ' · open development hub' : ''}
        </span>
        {!session.open && (
          <button type="button" onClick={onSignOut}>
            Sign out
          </button>
        )}
      </header>
      <main id="main" tabIndex={-1} ref={mainRef}>
        <Switch>
          <Route path="/" component={FleetMatrix} />
          <Route path="/targets/:name">{(p) => <TargetView name={decodeURIComponent(p.name)} />}</Route>
          <Route path="/appsets" component={AppSetsView} />
          <Route path="/appsets/:name">{(p) => <AppSetView name={decodeURIComponent(p.name)} />}</Route>
          <Route path="/history" component={HistoryView} />
          <Route path="/audit" component={AuditView} />
          <Route path="/windows" component={WindowsView} />
          <Route path="/break-glass" component={BreakGlassView} />
          <Route>
            <h1>Not found</h1>
            <p>
              <Link href="/">Back to the fleet</Link>
            </p>
          </Route>
        </Switch>
      </main>
    </SessionContext.Provider>
  );
}

/** Where the issuer sends the person back: the code is traded once, then the app takes over. */
function OidcCallback({ onSignedIn }: { onSignedIn: (token: string, returnTo: string) => void }) {
  const [error, setError] = useState<unknown>(null);
  useEffect(() => {
    let done = false;
    finishOidcSignIn().then(
      ({ token, returnTo }) => !done && onSignedIn(token.token, returnTo),
      (e: unknown) => !done && setError(e),
    );
    // StrictMode runs this twice in development: both get the one trade's answer.
    return () => {
      done = true;
    };
  }, [onSignedIn]);
  return (
    <main id="main" className="sign-in">
      <h1>Signing in…</h1>
      <ErrorNote error={error} />
      {error !== null && <a href="/">Back to sign-in</a>}
    </main>
  );
}

function App() {
  const client = useQueryClient();
  const [callback, setCallback] = useState(location.pathname === CALLBACK_PATH);
  const [oidcSignedIn, setOidcSignedIn] = useState(false);
  if (callback)
    return (
      <OidcCallback
        onSignedIn={(token, returnTo) => {
          storeToken(token);
          history.replaceState(null, '', returnTo);
          setCallback(false);
          setOidcSignedIn(true);
          void client.invalidateQueries();
        }}
      />
    );
  return <SignedIn afterOidc={oidcSignedIn} />;
}

function SignedIn({ afterOidc }: { afterOidc: boolean }) {
  const client = useQueryClient();
  const [tokenSignedIn, setTokenSignedIn] = useState(false);
  const [signedOut, setSignedOut] = useState(false);
  const session = useQuery({ queryKey: ['session'], queryFn: () => get<SessionView>('/api/v1/session') });
  const signOut = () => {
    storeToken(null);
    setSignedOut(true);
    setTokenSignedIn(false);
    // Forget every answer given to the token. Clearing the cache alone re-renders nothing (the
    // console stayed signed in on screen): the session is reset, so it is asked again, without a
    // token, and its 401 brings the sign-in page.
    client.removeQueries({ predicate: (q) => q.queryKey[0] !== 'session' });
    void client.resetQueries({ queryKey: ['session'] });
  };
  if (session.isPending) return <p className="loading">Loading…</p>;
  if (session.error) {
    if (session.error instanceof ApiError && session.error.status === 401) {
      return (
        <SignIn
          afterSignOut={signedOut}
          onSignedIn={(token) => {
            storeToken(token);
            setTokenSignedIn(true);
            void client.invalidateQueries();
          }}
        />
      );
    }
    return <ErrorNote error={session.error} />;
  }
  return <Shell session={session.data} signedInNow={afterOidc || tokenSignedIn} onSignOut={signOut} />;
}

prefetchFleetPage(queryClient);
createRoot(document.getElementById('root')!).render(
  <StrictMode>
    <QueryClientProvider client={queryClient}>
      <App />
    </QueryClientProvider>
  </StrictMode>,
);
