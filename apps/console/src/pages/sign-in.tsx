import { type FormEvent, useState } from 'react';
import { ApiFailure } from '../api/client';
import { type Session, signIn } from '../api/session';

/**
 * Sign-in with a member's personal API key. The key lives only in this form's state until the
 * gateway answers: it is never written to localStorage, sessionStorage or a cookie a script can
 * read; the gateway answers with the HttpOnly session cookie instead.
 */
export function SignInPage({ onSignedIn, notice }: { onSignedIn: (session: Session) => void; notice?: string | null }) {
  const [apiKey, setApiKey] = useState('');
  const [error, setError] = useState<string | null>(notice ?? null);
  const [busy, setBusy] = useState(false);

  const submit = async (event: FormEvent) => {
    event.preventDefault();
    setBusy(true);
    setError(null);
    try {
      const session = await signIn(apiKey.trim());
      setApiKey('');
      onSignedIn(session);
    } catch (err) {
      setError(err instanceof ApiFailure ? (err.error.status === 401 ? 'That API key is unknown or revoked.' : `${err.error.code}: ${err.error.message}`) : 'The gateway did not answer.');
    } finally {
      setBusy(false);
    }
  };

  return (
    <main className="sign-in" id="main">
      <h1>Touchpoint console</h1>
      <form onSubmit={submit} aria-describedby="sign-in-help">
        <label htmlFor="api-key">Your API key</label>
        <input id="api-key" name="api-key" type="password" autoComplete="off" spellCheck={false} required value={apiKey} onChange={(e) => setApiKey(e.target.value)} />
        <p id="sign-in-help" className="help">
          Paste the personal key you were given (<code>tp_…</code>). It is exchanged for a session that ends when you sign out; the console does not keep the key.
        </p>
        {error ? (
          <p role="alert" className="error">
            {error}
          </p>
        ) : null}
        <button type="submit" disabled={busy || apiKey.trim() === ''}>
          {busy ? 'Signing in…' : 'Sign in'}
        </button>
      </form>
    </main>
  );
}
