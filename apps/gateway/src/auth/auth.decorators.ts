import { applyDecorators, createParamDecorator, type ExecutionContext, SetMetadata } from '@nestjs/common';
import { ApiBearerAuth, ApiCookieAuth, ApiExtension } from '@nestjs/swagger';
import { type ApiScope, Scope } from '@touchpoint/contracts';
import type { ApiKeyIdentity } from '../api-keys/api-keys.service.js';
import { ApiErrorResponses, BEARER_SCHEME, SESSION_SCHEME } from '../http/openapi.js';

/** The authenticated caller of a request (set by ApiKeyGuard). */
export type Caller = ApiKeyIdentity;

/** What a route requires of the caller's API key. */
export interface KeyRequirement {
  /** Every one of these scopes must be on the key (empty: any valid key). */
  scopes: ApiScope[];
  /**
   * Seed 002's "key created by an Administrator": the key's creator must, at call time, be an
   * active admin of the organization.
   */
  adminCreatedKey: boolean;
}

/**
 * Whether a route needs a key whose creator is, at call time, an admin of the organization: seed
 * 002's "key created by an Administrator" routes, and every route of the `admin` scope (the scope
 * was granted by an admin; a creator demoted to operator or gone loses it at once).
 */
export function needsAdminCreator(requirement: KeyRequirement): boolean {
  return requirement.adminCreatedKey || requirement.scopes.includes(Scope.Admin);
}

export const KEY_REQUIREMENT = 'touchpoint:key-requirement';
export const PUBLIC_ROUTE = 'touchpoint:public-route';

/**
 * Declares that a route (or every route of a controller) needs an API key with `scopes`, and
 * documents it in OpenAPI (bearer scheme or the console's session cookie, scopes, 401/403). Routes without this decorator still
 * need a valid key (no scope) unless marked `@PublicRoute()`.
 *
 * Tenancy comes with it: a `customer_id` in the path, query or body that is not the key's
 * organization answers 404 `not_found` (DESIGN §3).
 */
export function RequireKey(options: { scopes?: ApiScope[]; adminCreatedKey?: boolean } = {}): MethodDecorator & ClassDecorator {
  const requirement: KeyRequirement = { scopes: options.scopes ?? [], adminCreatedKey: options.adminCreatedKey ?? false };
  return applyDecorators(
    SetMetadata(KEY_REQUIREMENT, requirement),
    ApiBearerAuth(BEARER_SCHEME),
    ApiCookieAuth(SESSION_SCHEME),
    ApiExtension('x-required-scopes', requirement.scopes),
    ...(needsAdminCreator(requirement) ? [ApiExtension('x-admin-created-key', true)] : []),
    ApiErrorResponses(401, 403),
  );
}

/** A route anyone may call without a key (webhook ingress: it checks the provider's signature instead). */
export function PublicRoute(): MethodDecorator & ClassDecorator {
  return SetMetadata(PUBLIC_ROUTE, true);
}

/** Injects the authenticated caller into a handler parameter. */
export const CurrentCaller = createParamDecorator((_data: unknown, context: ExecutionContext): Caller => {
  return context.switchToHttp().getRequest<{ caller: Caller }>().caller;
});
