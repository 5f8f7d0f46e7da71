import { Inject, Injectable } from '@nestjs/common';
import type { ApiScope, MemberRole } from '@touchpoint/contracts';
import { AppError, ErrorCode } from '@touchpoint/errors';
import { APP_CONFIG } from '@touchpoint/runtime';
import { Clock } from '@touchpoint/time';
import { type ApiKeyIdentity, ApiKeysService } from '../api-keys/api-keys.service.js';
import type { GatewayConfig } from '../gateway.config.js';
import { SessionTokens } from './session-tokens.js';
import { SessionsRepository } from './sessions.repository.js';

/** A live session as the guard leaves it on the request, for the `/sessions/current` routes. */
export interface ConsoleSession {
  id: string;
  organizationId: string;
  memberId: string;
  expiresAt: Date;
  /** The CSRF token (derived from the cookie token; never stored). */
  csrfToken: string;
  /** SHA-256 of the CSRF token, as stored, for the constant-time check of `X-CSRF-Token`. */
  csrfHash: Buffer;
}

/** The session as `POST /sessions` and `GET /sessions/current` answer it. */
export interface SessionView {
  id: string;
  member_id: string;
  organization_id: string;
  /** The member's role right now. */
  role: MemberRole;
  /** The scopes of the key the member signed in with: the console can do what that key can. */
  scopes: ApiScope[];
  expires_at: string;
  /** Send it as `X-CSRF-Token` on every POST, PUT, PATCH and DELETE made with the cookie. */
  csrf_token: string;
}

/**
 * Sessions of the operator console: a member exchanges their own API key for a
 * short-lived session whose cookie the browser holds and page scripts cannot read. A session acts
 * through its key: it has the key's scopes, is recorded as the key's member, and ends the moment
 * the key is revoked or the member removed. Its lifetime is absolute (CONSOLE_SESSION_TTL_S).
 */
@Injectable()
export class SessionsService {
  constructor(
    private readonly sessions: SessionsRepository,
    private readonly apiKeys: ApiKeysService,
    private readonly tokens: SessionTokens,
    @Inject(Clock) private readonly clock: Clock,
    @Inject(APP_CONFIG) private readonly config: GatewayConfig,
  ) {}

  /**
   * Signs in with an API key secret: the key is checked exactly as a bearer request checks it.
   * Returns the session's view and its cookie token (shown only here, stored only hashed).
   * @throws AppError unauthorized (unknown, malformed or revoked key); forbidden (its member left)
   */
  async signIn(apiKeySecret: string): Promise<{ view: SessionView; token: string; maxAgeS: number }> {
    const identity = await this.apiKeys.authenticate(apiKeySecret);
    const now = this.clock.now();
    const maxAgeS = this.config.CONSOLE_SESSION_TTL_S;
    const token = this.tokens.generate();
    const csrfToken = this.tokens.csrfOf(token);
    const row = await this.sessions.insert({
      organizationId: identity.organizationId,
      apiKeyId: identity.apiKeyId,
      memberId: identity.createdBy.memberId,
      tokenHash: this.tokens.hash(token),
      csrfHash: this.tokens.hash(csrfToken),
      expiresAt: new Date(now.getTime() + maxAgeS * 1000),
      now,
    });
    const session: ConsoleSession = { id: row.id, organizationId: row.organization_id, memberId: row.member_id, expiresAt: row.expires_at, csrfToken, csrfHash: this.tokens.hash(csrfToken) };
    return { view: viewOf(session, identity), token, maxAgeS };
  }

  /**
   * Resolves a cookie token to its session and the caller it acts as (the same identity a bearer
   * request with the session's key gets). Unknown, malformed, ended and expired sessions, and
   * sessions of a revoked key, are the same 401; a key whose member left is 403, as for the key.
   * @throws AppError unauthorized, forbidden
   */
  async authenticate(token: string): Promise<{ session: ConsoleSession; identity: ApiKeyIdentity }> {
    if (!this.tokens.looksValid(token)) throw unauthorized();
    const hash = this.tokens.hash(token);
    const row = await this.sessions.findForAuth(hash);
    const now = this.clock.now();
    // The lookup is by hash; the constant-time check guards against a future lookup that is not exact.
    if (!row || !this.tokens.sameHash(row.token_hash, hash) || row.revoked_at || row.expires_at.getTime() <= now.getTime() || row.key_revoked_at) throw unauthorized();
    if (!row.member_active) throw new AppError(ErrorCode.Forbidden, 'the member this session acts for has left the organization');
    return {
      session: { id: row.id, organizationId: row.organization_id, memberId: row.member_id, expiresAt: row.expires_at, csrfToken: this.tokens.csrfOf(token), csrfHash: row.csrf_hash },
      identity: {
        apiKeyId: row.api_key_id,
        organizationId: row.organization_id,
        scopes: row.key_scopes,
        createdBy: { memberId: row.member_id, role: row.member_role, active: row.member_active },
        impersonatedBy: row.key_impersonated_by,
      },
    };
  }

  /** Whether `given` is the session's CSRF token (constant time). */
  csrfMatches(session: ConsoleSession, given: string): boolean {
    return given.length > 0 && given.length <= 128 && this.tokens.sameHash(session.csrfHash, this.tokens.hash(given));
  }

  /** The view of a session the guard resolved. */
  view(session: ConsoleSession, identity: ApiKeyIdentity): SessionView {
    return viewOf(session, identity);
  }

  /**
   * Ends a session: its cookie answers 401 from the next request on. Idempotent.
   * @throws AppError unauthorized when there is no such session in the organization
   */
  async signOut(session: ConsoleSession): Promise<void> {
    const row = await this.sessions.revoke(session.id, session.organizationId, this.clock.now());
    if (!row) throw unauthorized();
  }
}

function unauthorized(): AppError {
  return new AppError(ErrorCode.Unauthorized, 'sign in again: the console session is unknown, ended or expired (POST /sessions)');
}

function viewOf(session: ConsoleSession, identity: ApiKeyIdentity): SessionView {
  return {
    id: session.id,
    member_id: session.memberId,
    organization_id: session.organizationId,
    role: identity.createdBy.role,
    scopes: identity.scopes,
    expires_at: session.expiresAt.toISOString(),
    csrf_token: session.csrfToken,
  };
}
