/** Name of the console's session cookie. */
export const SESSION_COOKIE = 'tp_session';

/**
 * The `tp_session` value of a `Cookie` header, or '' when there is none. The first occurrence
 * wins, as browsers send the most specific (longest path) cookie first.
 */
export function sessionTokenOf(header: string | string[] | undefined): string {
  const value = Array.isArray(header) ? header.join('; ') : (header ?? '');
  for (const part of value.split(';')) {
    const eq = part.indexOf('=');
    if (eq < 0 || part.slice(0, eq).trim() !== SESSION_COOKIE) continue;
    return part.slice(eq + 1).trim();
  }
  return '';
}

/**
 * The `Set-Cookie` value that stores a session: unreadable by page script (`HttpOnly`), never sent
 * on a cross-site request (`SameSite=Strict`), for the whole gateway (`Path=/`: the console's API
 * calls go to the API's own paths), for `maxAgeS` seconds.
 */
export function sessionCookie(token: string, maxAgeS: number, secure: boolean): string {
  return `${SESSION_COOKIE}=${token}; HttpOnly; SameSite=Strict; Path=/; Max-Age=${Math.max(0, Math.floor(maxAgeS))}${secure ? '; Secure' : ''}`;
}

/** The `Set-Cookie` value that makes the browser drop the session cookie. */
export function clearedSessionCookie(secure: boolean): string {
  return sessionCookie('', 0, secure);
}
