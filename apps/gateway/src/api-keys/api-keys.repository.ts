import { Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import type { ApiScope, MemberRole } from '@touchpoint/contracts';
import { poolOf, type Queryable, rowsOf } from '@touchpoint/database';

/** An API key row as listed (never the hash). */
export interface ApiKeyRow {
  id: string;
  organization_id: string;
  created_by_member_id: string;
  name: string;
  secret_hint: string;
  scopes: ApiScope[];
  created_at: Date;
  last_used_at: Date | null;
  revoked_at: Date | null;
  impersonated_by: string | null;
}

/** What the auth check needs: the key, its hash, and its creator as they are right now. */
export interface ApiKeyAuthRow {
  id: string;
  organization_id: string;
  scopes: ApiScope[];
  secret_hash: Buffer;
  last_used_at: Date | null;
  revoked_at: Date | null;
  impersonated_by: string | null;
  creator_id: string;
  creator_role: MemberRole;
  creator_active: boolean;
}

const KEY_COLUMNS = 'id, organization_id, created_by_member_id, name, secret_hint, scopes, created_at, last_used_at, revoked_at, impersonated_by';

/** Every statement on `api_keys`. */
@Injectable()
export class ApiKeysRepository {
  /** The pool itself: every statement here is one statement, and the lookup runs on each request. */
  private readonly db: Queryable;

  constructor(dataSource: DataSource) {
    this.db = poolOf(dataSource);
  }

  async insert(input: { organizationId: string; createdByMemberId: string; name: string; secretHash: Buffer; secretHint: string; scopes: ApiScope[]; impersonatedBy: string | null }): Promise<ApiKeyRow> {
    const [row] = await rowsOf<ApiKeyRow>(
      this.db,
      `INSERT INTO api_keys (organization_id, created_by_member_id, name, secret_hash, secret_hint, scopes, impersonated_by)
       VALUES ($1, $2, $3, $4, $5, $6, $7)
       RETURNING ${KEY_COLUMNS}`,
      [input.organizationId, input.createdByMemberId, input.name, input.secretHash, input.secretHint, input.scopes, input.impersonatedBy],
    );
    return row!;
  }

  /**
   * The key with this secret hash joined to its creator, read on every request (no cache), so a
   * revocation or a creator's demotion takes effect on the very next call (DESIGN §3).
   */
  async findForAuth(secretHash: Buffer): Promise<ApiKeyAuthRow | undefined> {
    const [row] = await rowsOf<ApiKeyAuthRow>(
      this.db,
      `SELECT k.id, k.organization_id, k.scopes, k.secret_hash, k.last_used_at, k.revoked_at, k.impersonated_by,
              m.id AS creator_id, m.role AS creator_role, m.active AS creator_active
         FROM api_keys k
         JOIN members m ON m.id = k.created_by_member_id
        WHERE k.secret_hash = $1`,
      [secretHash],
    );
    return row;
  }

  /**
   * Stamps `last_used_at`, at most once per `intervalMs` per key: the condition makes concurrent
   * requests of one key write once, and most requests skip the write entirely.
   */
  async touch(id: string, now: Date, intervalMs: number): Promise<void> {
    await rowsOf(
      this.db,
      `UPDATE api_keys SET last_used_at = $2
        WHERE id = $1 AND (last_used_at IS NULL OR last_used_at <= $2::timestamptz - make_interval(secs => $3::double precision / 1000))`,
      [id, now, intervalMs],
    );
  }

  listByOrganization(organizationId: string): Promise<ApiKeyRow[]> {
    return rowsOf<ApiKeyRow>(this.db, `SELECT ${KEY_COLUMNS} FROM api_keys WHERE organization_id = $1 ORDER BY created_at, id`, [organizationId]);
  }

  /**
   * Revokes a key (of `organizationId` when given). Revoking twice keeps the first instant.
   * Returns the key, or undefined when there is none (in that organization).
   */
  async revoke(id: string, organizationId: string | null, now: Date): Promise<ApiKeyRow | undefined> {
    const [row] = await rowsOf<ApiKeyRow>(
      this.db,
      `UPDATE api_keys SET revoked_at = COALESCE(revoked_at, $3)
        WHERE id = $1 AND ($2::uuid IS NULL OR organization_id = $2::uuid)
       RETURNING ${KEY_COLUMNS}`,
      [id, organizationId, now],
    );
    return row;
  }
}
