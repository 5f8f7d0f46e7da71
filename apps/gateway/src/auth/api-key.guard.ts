import { type CanActivate, type ExecutionContext, Injectable, type Type } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { AppError, ErrorCode } from '@touchpoint/errors';
import { HealthController } from '@touchpoint/runtime';
import { ApiKeysService } from '../api-keys/api-keys.service.js';
import { sessionTokenOf } from '../sessions/session-cookie.js';
import { type CredentialRequest, SessionCredential } from '../sessions/session-credential.js';
import { noteOrganization } from '../http/request-context.js';
import { type Caller, KEY_REQUIREMENT, type KeyRequirement, needsAdminCreator, PUBLIC_ROUTE } from './auth.decorators.js';
import { assertSameTenant } from './tenancy.js';

/** Routes of the shared platform that answer without a key (probes and Prometheus scrapes). */
const PLATFORM_CONTROLLERS: Type[] = [HealthController];

/** What a route requires when it declares nothing: a valid key, no particular scope. */
const DEFAULT_REQUIREMENT: KeyRequirement = { scopes: [], adminCreatedKey: false };

type GuardedRequest = CredentialRequest & { params?: unknown; query?: unknown; body?: unknown; caller?: Caller };

/**
 * The gateway's one guard, applied to every HTTP route (DESIGN §3), in this order:
 * 1. `Authorization: Bearer <secret>` names a live key, else 401 `unauthorized`, and its creator is
 *    still a member of the organization, else 403 `forbidden`. Without an `Authorization` header,
 *    the console's session cookie stands for the key it was signed in with, under the same checks,
 *    plus the CSRF check on unsafe methods (sessions/session-credential.ts);
 * 2. the key has every scope the route requires, else 403 `forbidden`;
 * 3. for routes of the `admin` scope and those needing a key created by an admin, its creator is an
 *    admin right now, else 403;
 * 4. every `customer_id` in path, query or body is the key's organization, else 404 `not_found`.
 * Nothing is cached: a revoked key, a removed member or a demoted admin fails on the next request.
 */
@Injectable()
export class ApiKeyGuard implements CanActivate {
  constructor(
    private readonly reflector: Reflector,
    private readonly apiKeys: ApiKeysService,
    private readonly sessions: SessionCredential,
  ) {}

  async canActivate(context: ExecutionContext): Promise<boolean> {
    if (context.getType() !== 'http') return true;
    const targets = [context.getHandler(), context.getClass()];
    if (this.reflector.getAllAndOverride<boolean>(PUBLIC_ROUTE, targets)) return true;
    if (PLATFORM_CONTROLLERS.includes(context.getClass())) return true;
    const requirement = this.reflector.getAllAndOverride<KeyRequirement>(KEY_REQUIREMENT, targets) ?? DEFAULT_REQUIREMENT;
    const request = context.switchToHttp().getRequest<GuardedRequest>();

    const caller = await this.callerOf(request);
    request.caller = caller;
    noteOrganization(caller.organizationId);

    const missing = requirement.scopes.filter((scope) => !caller.scopes.includes(scope));
    if (missing.length) throw new AppError(ErrorCode.Forbidden, `the API key lacks the scope ${missing.join(', ')}`, { required_scopes: requirement.scopes });
    if (needsAdminCreator(requirement) && !(caller.createdBy.role === 'admin' && caller.createdBy.active)) {
      throw new AppError(ErrorCode.Forbidden, 'this route needs a key created by a member who is an admin of the organization');
    }
    assertSameTenant(caller.organizationId, request);
    return true;
  }

  /**
   * Who the request's credential proves: the bearer key, or, only when no `Authorization` header
   * is sent, the console session of the `tp_session` cookie (a bearer request is never judged by
   * a cookie that happens to ride along).
   */
  private callerOf(request: GuardedRequest): Promise<Caller> {
    const token = request.headers.authorization === undefined ? sessionTokenOf(request.headers.cookie) : '';
    if (token) return this.sessions.authenticate(token, request);
    return this.apiKeys.authenticate(bearerOf(request.headers.authorization));
  }
}

/** The secret of an `Authorization: Bearer <secret>` header ('' when absent or another scheme). */
function bearerOf(header: string | string[] | undefined): string {
  const value = Array.isArray(header) ? header[0] : header;
  const match = /^Bearer\s+(\S+)\s*$/i.exec(value ?? '');
  return match?.[1] ?? '';
}
