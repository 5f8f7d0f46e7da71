import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import type { ApiScope, MemberRole } from '@touchpoint/contracts';
import { RpcClient } from '@touchpoint/runtime';
import type { TestWorld } from '@touchpoint/testing';
import { ApiKeysService } from '../../apps/gateway/src/api-keys/api-keys.service.js';
import { MembersService } from '../../apps/gateway/src/members/members.service.js';
import { OrganizationsService } from '../../apps/gateway/src/organizations/organizations.service.js';

/** An organization with one member and one key of that member, made through the gateway's own rules. */
export interface SeededKey {
  organizationId: string;
  memberId: string;
  apiKeyId: string;
  secret: string;
}

/** Builders over a running gateway's services (STYLE: builders with sensible defaults). */
export function gatewayBuilders(app: NestFastifyApplication) {
  const organizations = app.get(OrganizationsService);
  const members = app.get(MembersService);
  const apiKeys = app.get(ApiKeysService);
  let n = 0;
  return {
    organizations,
    members,
    apiKeys,
    /** A new organization, an admin (or `role`) member, and a key with `scopes`. */
    async organizationWithKey(options: { scopes?: ApiScope[]; role?: MemberRole; organizationId?: string; email?: string } = {}): Promise<SeededKey> {
      n += 1;
      const organizationId = options.organizationId ?? (await organizations.create(`Org ${n}`)).id;
      const member = await members.add({ organizationId, email: options.email ?? `member${n}@example.com`, role: options.role ?? 'admin' });
      const { key, secret } = await apiKeys.create({ organizationId, createdByMemberId: member.id, scopes: options.scopes ?? ['admin'], name: `key ${n}` });
      return { organizationId, memberId: member.id, apiKeyId: key.id, secret };
    },
  };
}

/** A small HTTP client for a gateway URL. */
export function httpClient(baseUrl: string) {
  return async (method: string, path: string, options: { secret?: string; json?: unknown; body?: string; headers?: Record<string, string> } = {}): Promise<{ status: number; headers: Headers; body: any; ms: number }> => {
    const headers: Record<string, string> = { ...(options.headers ?? {}) };
    if (options.secret) headers.authorization = `Bearer ${options.secret}`;
    let body = options.body;
    if (options.json !== undefined) {
      body = JSON.stringify(options.json);
      headers['content-type'] ??= 'application/json';
    }
    const started = performance.now();
    const res = await fetch(`${baseUrl}${path}`, { method, headers, body });
    const text = await res.text();
    const ms = performance.now() - started;
    let parsed: unknown = text;
    try {
      parsed = JSON.parse(text);
    } catch {
      // not JSON (the Swagger UI page)
    }
    return { status: res.status, headers: res.headers, body: parsed, ms };
  };
}

/** The schema-qualified gateway table name in a test world. */
export const gatewayTable = (world: TestWorld, table: string): string => `"${world.schema('gateway')}".${table}`;

/**
 * Records the calls `app`'s RpcClient makes with `pattern` (what `measure` reads of each request)
 * while `work` runs, the calls still made; the client is put back afterwards.
 */
export async function recordRpcCalls<T, R>(app: NestFastifyApplication, pattern: string, measure: (data: never) => T, work: () => Promise<R>): Promise<{ calls: T[]; result: R }> {
  const rpc = app.get(RpcClient);
  const calls: T[] = [];
  const call = rpc.call.bind(rpc);
  rpc.call = ((service: string, called: string, data: never, ...rest: unknown[]) => {
    if (called === pattern) calls.push(measure(data));
    return (call as (...a: unknown[]) => unknown)(service, called, data, ...rest);
  }) as typeof rpc.call;
  try {
    return { calls, result: await work() };
  } finally {
    rpc.call = call;
  }
}
