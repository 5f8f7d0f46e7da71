import { Inject, Injectable } from '@nestjs/common';
import { AppError, ErrorCode } from '@touchpoint/errors';
import { APP_CONFIG } from '@touchpoint/runtime';
import type { ApiKeyIdentity } from '../api-keys/api-keys.service.js';
import type { GatewayConfig } from '../gateway.config.js';
import { type ConsoleSession, SessionsService } from './sessions.service.js';

/** Methods that change state: with the cookie they need the CSRF token. */
const UNSAFE_METHODS = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);
/** The header that carries the CSRF token. */
export const CSRF_HEADER = 'x-csrf-token';

/** What the credential check reads of a request, and where it leaves the session. */
export interface CredentialRequest {
  method: string;
  protocol?: string;
  headers: Record<string, string | string[] | undefined>;
  consoleSession?: ConsoleSession;
}

/**
 * The console's session cookie as a credential. A cookie rides along on every
 * request the browser makes, whoever's page asks, so a state-changing request made with it must
 * prove it comes from the console: it carries `X-CSRF-Token` equal to the session's CSRF token,
 * which only a page of our origin can read (from `POST /sessions` or `GET /sessions/current`),
 * and an `Origin` header, when the browser sends one, must be the gateway's own. SameSite=Strict
 * already keeps the cookie off cross-site requests; these checks hold even where it does not
 * (an old browser, a sibling subdomain). A bearer key is not sent by the browser on its own, so
 * bearer requests need neither.
 */
@Injectable()
export class SessionCredential {
  constructor(
    private readonly sessions: SessionsService,
    @Inject(APP_CONFIG) private readonly config: GatewayConfig,
  ) {}

  /**
   * The caller of a request signed in with the cookie token `token`; leaves the session on
   * `request.consoleSession`.
   * @throws AppError unauthorized / forbidden as SessionsService.authenticate; forbidden with
   *   details `{reason: 'csrf'}` when an unsafe request lacks the CSRF token or comes from another origin
   */
  async authenticate(token: string, request: CredentialRequest): Promise<ApiKeyIdentity> {
    const { session, identity } = await this.sessions.authenticate(token);
    if (UNSAFE_METHODS.has(request.method.toUpperCase())) {
      this.assertOwnOrigin(request);
      const given = request.headers[CSRF_HEADER];
      if (!this.sessions.csrfMatches(session, (Array.isArray(given) ? given[0] : given) ?? '')) {
        throw csrfRefused("send the session's csrf_token (from POST /sessions or GET /sessions/current) as X-CSRF-Token");
      }
    }
    request.consoleSession = session;
    return identity;
  }

  /**
   * Refuses a request whose `Origin` header names another origin than the gateway's own
   * (CONSOLE_ORIGIN; else, with TRUST_FORWARDED_HEADERS, the proxy's `X-Forwarded-Proto` and
   * `X-Forwarded-Host`; else the connection's scheme and `Host`). No `Origin` header passes: browsers
   * send one on every cross-origin unsafe request, so its absence means same-origin or not a browser.
   * @throws AppError forbidden with details `{reason: 'csrf'}`
   */
  assertOwnOrigin(request: CredentialRequest): void {
    const origin = first(request.headers.origin);
    if (origin === undefined) return;
    if (origin !== this.ownOrigin(request)) throw csrfRefused(`requests made with the console session must come from the console's own origin (Origin ${origin} is not ours)`);
  }

  /** Whether the cookie should be marked `Secure` for this request (CONSOLE_COOKIE_SECURE, or https). */
  secureCookie(request: CredentialRequest): boolean {
    return this.config.CONSOLE_COOKIE_SECURE || schemeOf(request) === 'https';
  }

  /**
   * The origin an `Origin` header must equal. Forwarded headers are read only when
   * TRUST_FORWARDED_HEADERS says a proxy sets them: any client can send them, so trusting them
   * by default would let a forged `X-Forwarded-Host` match a forged `Origin`.
   */
  private ownOrigin(request: CredentialRequest): string {
    if (this.config.CONSOLE_ORIGIN) return this.config.CONSOLE_ORIGIN;
    if (this.config.TRUST_FORWARDED_HEADERS) return `${schemeOf(request)}://${first(request.headers['x-forwarded-host']) ?? first(request.headers.host) ?? ''}`;
    return `${(request.protocol ?? 'http').toLowerCase()}://${first(request.headers.host) ?? ''}`;
  }
}

function csrfRefused(message: string): AppError {
  return new AppError(ErrorCode.Forbidden, message, { reason: 'csrf' });
}

function first(value: string | string[] | undefined): string | undefined {
  const v = Array.isArray(value) ? value[0] : value;
  return v === undefined ? undefined : v.split(',')[0]!.trim();
}

/** The scheme the client used: a proxy's `X-Forwarded-Proto` when present, else the connection's. */
function schemeOf(request: CredentialRequest): string {
  return (first(request.headers['x-forwarded-proto']) ?? request.protocol ?? 'http').toLowerCase();
}
