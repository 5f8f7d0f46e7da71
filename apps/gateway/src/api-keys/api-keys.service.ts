import { Inject, Injectable } from '@nestjs/common';
import { API_SCOPES, type ApiScope, type MemberRole, Scope } from '@touchpoint/contracts';
import { AppError, ErrorCode } from '@touchpoint/errors';
import { codePointLength } from '@touchpoint/text';
import { Clock } from '@touchpoint/time';
import { GroupCommit, invalidField, notFound, UUID_PATTERN } from '@touchpoint/database';
import { MembersService } from '../members/members.service.js';
import { ApiKeySecrets } from './api-key-secrets.js';
import { type ApiKeyAuthRow, type ApiKeyRow, ApiKeysRepository } from './api-keys.repository.js';

/** `last_used_at` is written at most once per this interval per key, ms (ours: keeps reads read-only). */
export const LAST_USED_TOUCH_INTERVAL_MS = 60_000;
/** How long a key lookup may take before its requests answer 503 `service_unavailable`, ms (ours). */
export const KEY_LOOKUP_DEADLINE_MS = 5_000;
/** Longest key name, characters (ours). */
export const API_KEY_NAME_MAX = 100;
/** Longest name of the support person an impersonation key is issued to, characters (ours). */
export const IMPERSONATOR_MAX = 200;

/**
 * Who is calling: the key, its organization and scopes, and its creator as they are now. The
 * creator is the member the key acts for, and is a current member of the organization (a key whose
 * creator left never authenticates). `impersonatedBy` comes from the key itself, set when it was
 * issued: non-null means a support person acts as the member (an impersonated session).
 */
export interface ApiKeyIdentity {
  apiKeyId: string;
  organizationId: string;
  scopes: ApiScope[];
  createdBy: { memberId: string; role: MemberRole; active: boolean };
  impersonatedBy: string | null;
}

/** Public view of a key (no secret, no hash). */
export interface ApiKeyView {
  id: string;
  organization_id: string;
  name: string;
  /** First characters of the secret, to tell keys apart. */
  secret_hint: string;
  scopes: ApiScope[];
  created_by_member_id: string;
  created_at: string;
  last_used_at: string | null;
  revoked_at: string | null;
  /** The support person this key was issued to, acting as its creator; null for the member's own key. */
  impersonated_by: string | null;
}

/**
 * API keys (DESIGN §3): random secrets shown once and stored hashed, bound to one organization,
 * created by a member (admin or operator), with scopes, revocable at once.
 */
@Injectable()
export class ApiKeysService {
  /**
   * The key lookups of concurrent requests with the same secret: the requests that arrive while a
   * lookup of that secret is under way share the next one, which starts after they all arrived. So
   * every request still reads the key after it came in (a key revoked before a request arrived is
   * refused to it: nothing is cached), and a client running many requests at once on one key costs
   * one lookup per database round trip instead of one per request (`bench:gateway`). A failed
   * lookup fails the requests waiting for the next one too (the database is what failed), and a
   * lookup that has not answered within KEY_LOOKUP_DEADLINE_MS fails as 503: the requests of the key
   * queue behind it, so a stuck connection must not hold them without end.
   */
  private readonly lookups = new GroupCommit<Buffer, ApiKeyAuthRow | undefined>(
    async (_hash, hashes) => {
      const row = await withDeadline(this.keys.findForAuth(hashes[0]!), KEY_LOOKUP_DEADLINE_MS);
      return hashes.map(() => row);
    },
    10_000,
    () => false,
  );

  constructor(
    private readonly keys: ApiKeysRepository,
    private readonly members: MembersService,
    private readonly secrets: ApiKeySecrets,
    @Inject(Clock) private readonly clock: Clock,
  ) {}

  /**
   * Creates a key for `organizationId` on behalf of member `createdByMemberId` and returns it with
   * its secret (the only time the secret is visible). Only an admin may grant the `admin` scope
   * (ours: an operator could otherwise mint keys that manage keys). `impersonatedBy` issues the key
   * to a support person acting as the member (the admin CLI's `--impersonated-by`); a key created
   * with an impersonation key passes its mark on, so impersonation never mints a member's own key.
   * @throws AppError validation_failed naming `scopes`, `name` or `impersonated_by`; not_found when
   *   the member is not in the organization; forbidden when the member has left or grants `admin`
   *   without being one
   */
  async create(input: { organizationId: string; createdByMemberId: string; name?: string | null; scopes: string[]; impersonatedBy?: string | null }): Promise<{ key: ApiKeyView; secret: string }> {
    const scopes = parseScopes(input.scopes);
    const name = (input.name ?? '').trim() || 'api key';
    if (codePointLength(name) > API_KEY_NAME_MAX) throw invalidField('name', `name must be at most ${API_KEY_NAME_MAX} characters`);
    const impersonatedBy = input.impersonatedBy === undefined || input.impersonatedBy === null ? null : input.impersonatedBy.trim();
    if (impersonatedBy !== null && (impersonatedBy === '' || codePointLength(impersonatedBy) > IMPERSONATOR_MAX)) {
      throw invalidField('impersonated_by', `impersonated_by must be 1 to ${IMPERSONATOR_MAX} characters`);
    }
    const creator = await this.members.get(input.organizationId, input.createdByMemberId);
    if (!creator.active) throw new AppError(ErrorCode.Forbidden, 'the member has left the organization');
    if (scopes.includes(Scope.Admin) && creator.role !== 'admin') throw new AppError(ErrorCode.Forbidden, 'only an admin member can create a key with the admin scope');
    const secret = this.secrets.generate();
    const row = await this.keys.insert({
      organizationId: input.organizationId,
      createdByMemberId: creator.id,
      name,
      secretHash: this.secrets.hash(secret),
      secretHint: this.secrets.hint(secret),
      scopes,
      impersonatedBy,
    });
    return { key: viewOf(row), secret };
  }

  /**
   * Resolves a bearer secret to the caller. Unknown, malformed and revoked keys are all the same
   * 401, so a caller learns nothing about which it was. A key whose creator has left the
   * organization stops at once (403): every key acts for a current member.
   * @throws AppError unauthorized, forbidden
   */
  async authenticate(secret: string): Promise<ApiKeyIdentity> {
    if (!this.secrets.looksValid(secret)) throw unauthorized();
    const hash = this.secrets.hash(secret);
    const [row] = await this.lookups.submit(hash.toString('hex'), [hash]);
    // The lookup is by hash, so the secret itself is never compared; the constant-time check
    // guards against a future lookup that is not an exact match.
    if (!row || !this.secrets.sameHash(row.secret_hash, hash) || row.revoked_at) throw unauthorized();
    if (!row.creator_active) throw new AppError(ErrorCode.Forbidden, 'the member this API key acts for has left the organization');
    const now = this.clock.now();
    if (!row.last_used_at || now.getTime() - row.last_used_at.getTime() >= LAST_USED_TOUCH_INTERVAL_MS) {
      await this.keys.touch(row.id, now, LAST_USED_TOUCH_INTERVAL_MS);
    }
    return {
      apiKeyId: row.id,
      organizationId: row.organization_id,
      scopes: row.scopes,
      createdBy: { memberId: row.creator_id, role: row.creator_role, active: row.creator_active },
      impersonatedBy: row.impersonated_by,
    };
  }

  /** Keys of an organization, oldest first, revoked ones included. */
  async list(organizationId: string): Promise<ApiKeyView[]> {
    return (await this.keys.listByOrganization(organizationId)).map(viewOf);
  }

  /**
   * Revokes a key; it fails with 401 from the next request on. Idempotent. `organizationId`
   * limits the revocation to that tenant's keys (HTTP); the admin CLI passes null.
   * @throws AppError not_found when there is no such key (in that organization)
   */
  async revoke(apiKeyId: string, organizationId: string | null): Promise<ApiKeyView> {
    const row = UUID_PATTERN.test(apiKeyId) ? await this.keys.revoke(apiKeyId, organizationId, this.clock.now()) : undefined;
    if (!row) throw notFound('api key');
    return viewOf(row);
  }
}

function unauthorized(): AppError {
  return new AppError(ErrorCode.Unauthorized, 'a valid API key is required (Authorization: Bearer <secret>)');
}

/**
 * Scopes as given, deduplicated, in the order of API_SCOPES.
 * @throws AppError validation_failed (`scopes`) when empty or when one is unknown
 */
export function parseScopes(input: string[]): ApiScope[] {
  const given = (input ?? []).map((s) => s.trim()).filter(Boolean);
  if (given.length === 0) throw invalidField('scopes', 'at least one scope is required');
  const unknown = given.filter((s) => !(API_SCOPES as readonly string[]).includes(s));
  if (unknown.length) throw invalidField('scopes', `unknown scope(s) ${unknown.join(', ')}; allowed: ${API_SCOPES.join(', ')}`);
  return API_SCOPES.filter((s) => given.includes(s));
}

function viewOf(row: ApiKeyRow): ApiKeyView {
  return {
    id: row.id,
    organization_id: row.organization_id,
    name: row.name,
    secret_hint: row.secret_hint,
    scopes: row.scopes,
    created_by_member_id: row.created_by_member_id,
    created_at: row.created_at.toISOString(),
    last_used_at: row.last_used_at?.toISOString() ?? null,
    revoked_at: row.revoked_at?.toISOString() ?? null,
    impersonated_by: row.impersonated_by,
  };
}

/** `work`, or AppError service_unavailable once `ms` have passed without its answer (the work itself goes on). */
function withDeadline<T>(work: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new AppError(ErrorCode.ServiceUnavailable, `the API key could not be checked within ${ms} ms`)), ms);
  });
  return Promise.race([work, deadline]).finally(() => clearTimeout(timer));
}
