import { ApiFailure, CSRF_HEADER, errorOf, setCsrfToken } from './client';
import { fetchOrFailure } from './network';

/**
 * The signed-in member's session (`POST /sessions`, `GET /sessions/current`): who acts, and the
 * CSRF token unsafe calls carry. The API key given at sign-in is sent once and kept nowhere.
 */
export interface Session {
  id: string;
  member_id: string;
  organization_id: string;
  role: string;
  scopes: string[];
  expires_at: string;
  csrf_token: string;
}

async function sessionCall(method: 'GET' | 'POST' | 'DELETE', body?: object, csrf?: string): Promise<Response> {
  const headers: Record<string, string> = {};
  if (body) headers['content-type'] = 'application/json';
  if (csrf) headers[CSRF_HEADER] = csrf;
  // No answer at all reads as 503 `network_error`, which callers show as any failed call.
  return fetchOrFailure(method === 'POST' ? '/sessions' : '/sessions/current', { method, headers, body: body ? JSON.stringify(body) : undefined, credentials: 'same-origin' });
}

async function failure(response: Response): Promise<ApiFailure> {
  return new ApiFailure(errorOf(response, await response.json().catch(() => undefined)));
}

/** Exchanges `apiKey` for the session cookie. @throws ApiFailure (401 unauthorized for a bad key) */
export async function signIn(apiKey: string): Promise<Session> {
  const response = await sessionCall('POST', { api_key: apiKey });
  if (!response.ok) throw await failure(response);
  const session = (await response.json()) as Session;
  setCsrfToken(session.csrf_token);
  return session;
}

/** The current session, or null when there is none (no cookie, expired, revoked). */
export async function currentSession(): Promise<Session | null> {
  const response = await sessionCall('GET');
  if (response.status === 401) return null;
  if (!response.ok) throw await failure(response);
  const session = (await response.json()) as Session;
  setCsrfToken(session.csrf_token);
  return session;
}

/** Ends the session at the gateway (the cookie is cleared by its answer). */
export async function signOut(session: Session): Promise<void> {
  const response = await sessionCall('DELETE', undefined, session.csrf_token);
  setCsrfToken(null);
  if (!response.ok && response.status !== 401) throw await failure(response);
}
