import { useCallback, useEffect, useState } from 'react';
import { onSignedOut } from './api/client';
import { currentSession, type Session, signOut } from './api/session';
import { QueueTotalProvider, useQueueTotal } from './badge';
import { SignInPage } from './pages/sign-in';
import { Link, navigate, useLocation } from './router';
import { NAV, resolve } from './routes';

/** The sign-in page's notice after a 401 mid-use. */
const SESSION_ENDED = 'Your session ended; sign in again.';

/**
 * The console shell: asks the gateway for the current session (the cookie is HttpOnly, so the
 * page cannot tell by itself), shows the sign-in page without one, else the nav and the page of
 * the current path. A call answered 401 mid-use (the session expired or its key was revoked)
 * drops to the sign-in page with a notice saying so; signing out shows none.
 */
export function App() {
  const [session, setSession] = useState<Session | null | undefined>(undefined);
  const [failure, setFailure] = useState<string | null>(null);

  useEffect(() => {
    currentSession().then(setSession, (err: Error) => {
      setFailure(err.message);
      setSession(null);
    });
    return onSignedOut(() => {
      setFailure(SESSION_ENDED);
      setSession(null);
    });
  }, []);

  if (session === undefined) return <p className="loading">Loading…</p>;
  if (session === null)
    return (
      <SignInPage
        onSignedIn={(signedIn) => {
          setFailure(null);
          setSession(signedIn);
        }}
        notice={failure}
      />
    );
  return (
    <QueueTotalProvider>
      <Shell
        session={session}
        onSignedOut={() => {
          setFailure(null);
          setSession(null);
        }}
      />
    </QueueTotalProvider>
  );
}

function Shell({ session, onSignedOut }: { session: Session; onSignedOut: () => void }) {
  const location = useLocation();
  const { total } = useQueueTotal();
  const { page: Page, params, section } = resolve(location.path);
  useEffect(() => {
    if (location.path === '/') navigate('/review', { replace: true });
  }, [location.path]);
  const out = useCallback(() => {
    void signOut(session).finally(onSignedOut);
  }, [session, onSignedOut]);

  return (
    <div className="shell">
      <header className="topbar">
        <span className="brand">Touchpoint console</span>
        <span className="who">
          Signed in as member <code>{session.member_id.slice(0, 8)}</code> ({session.role})
        </span>
        <button type="button" className="link-button" onClick={out}>
          Sign out
        </button>
      </header>
      <nav aria-label="Main">
        {NAV.map((group) => (
          <div key={group.title} className="nav-group">
            <h2>{group.title}</h2>
            <ul>
              {group.items.map((item) => (
                <li key={item.to}>
                  <Link to={item.to} aria-current={section === item.to ? 'page' : undefined}>
                    {item.label}
                    {item.to === '/review' && total !== null ? (
                      <span className="badge" data-testid="queue-badge" aria-label={`${total} drafts waiting`}>
                        {total}
                      </span>
                    ) : null}
                  </Link>
                </li>
              ))}
            </ul>
          </div>
        ))}
      </nav>
      <main id="main">
        <Page params={params} location={location} session={session} />
      </main>
    </div>
  );
}
