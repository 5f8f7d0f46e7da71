import { AppError, ErrorCode } from '@touchpoint/errors';

/** The name seed 002's REST contract gives the organization id. */
export const TENANT_PARAMETER = 'customer_id';

/** The `customer_id` values a request carries in its path, query string and JSON body. */
export function customerIdsOf(request: { params?: unknown; query?: unknown; body?: unknown }): unknown[] {
  const found: unknown[] = [];
  for (const source of [request.params, request.query, request.body]) {
    if (!source || typeof source !== 'object' || Array.isArray(source) || !(TENANT_PARAMETER in source)) continue;
    const value = (source as Record<string, unknown>)[TENANT_PARAMETER];
    // `?customer_id=a&customer_id=b` parses as an array: every one must match.
    found.push(...(Array.isArray(value) ? value : [value]));
  }
  return found;
}

/**
 * Nobody crosses a tenant (DESIGN §3, §5.5): every `customer_id` must be the caller's organization,
 * else 404, never 403, so a caller cannot learn that another organization's id exists.
 * @throws AppError not_found
 */
export function assertSameTenant(organizationId: string, request: { params?: unknown; query?: unknown; body?: unknown }): void {
  for (const value of customerIdsOf(request)) {
    if (value !== organizationId) throw new AppError(ErrorCode.NotFound, 'not found');
  }
}
