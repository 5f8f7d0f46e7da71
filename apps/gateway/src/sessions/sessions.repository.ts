import { Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import type { ApiScope, MemberRole } from '@touchpoint/contracts';
import { rowsOf } from '@touchpoint/database';

/** A console session row (never its hashes). */
export interface SessionRow {
  id: string;
  organization_id: string;
  api_key_id: string;
  member_id: string;
  created_at: Date;
  expires_at: Date;
  revoked_at: Date | null;
}

/** What authenticating a session needs: the session, and its key and member as they are right now. */
export interface SessionAuthRow extends SessionRow {
  token_hash: Buffer;
  csrf_hash: Buffer;
  key_scopes: ApiScope[];
  key_revoked_at: Date | null;
  key_impersonated_by: string | null;
  member_role: MemberRole;
  member_active: boolean;
}

const SESSION_COLUMNS = 'id, organization_id, api_key_id, member_id, created_at, expires_at, revoked_at';

/** How long an ended session's row is kept before a later sign-in of the same key deletes it (ours). */
const ENDED_SESSION_RETENTION = '1 day';

/** Every statement on `console_sessions`. */
@Injectable()
export class SessionsRepository {
  constructor(private readonly dataSource: DataSource) {}

  /**
   * Stores a new session and, in the same statement, deletes the same key's sessions that ended
   * more than a day ago, so the table holds about one row per live sign-in without a sweep.
   */
  async insert(input: { organizationId: string; apiKeyId: string; memberId: string; tokenHash: Buffer; csrfHash: Buffer; expiresAt: Date; now: Date }): Promise<SessionRow> {
    const [row] = await rowsOf<SessionRow>(
      this.dataSource,
      `WITH pruned AS (
         DELETE FROM console_sessions
          WHERE api_key_id = $2 AND LEAST(expires_at, COALESCE(revoked_at, expires_at)) < $7::timestamptz - interval '${ENDED_SESSION_RETENTION}'
       )
       INSERT INTO console_sessions (organization_id, api_key_id, member_id, token_hash, csrf_hash, expires_at, created_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7)
       RETURNING ${SESSION_COLUMNS}`,
      [input.organizationId, input.apiKeyId, input.memberId, input.tokenHash, input.csrfHash, input.expiresAt, input.now],
    );
    return row!;
  }

  /**
   * The session with this token hash joined to its key and the key's creator, read on every
   * request (no cache), so revoking the key or the session, or removing or demoting the member,
   * takes effect on the very next call, as for a bearer key (DESIGN §3).
   */
  async findForAuth(tokenHash: Buffer): Promise<SessionAuthRow | undefined> {
    const [row] = await rowsOf<SessionAuthRow>(
      this.dataSource,
      `SELECT s.id, s.organization_id, s.api_key_id, s.member_id, s.created_at, s.expires_at, s.revoked_at, s.token_hash, s.csrf_hash,
              k.scopes AS key_scopes, k.revoked_at AS key_revoked_at, k.impersonated_by AS key_impersonated_by,
              m.role AS member_role, m.active AS member_active
         FROM console_sessions s
         JOIN api_keys k ON k.id = s.api_key_id
         JOIN members m ON m.id = k.created_by_member_id
        WHERE s.token_hash = $1`,
      [tokenHash],
    );
    return row;
  }

  /** Ends a session of `organizationId`; revoking twice keeps the first instant. Undefined when there is none. */
  async revoke(id: string, organizationId: string, now: Date): Promise<SessionRow | undefined> {
    const [row] = await rowsOf<SessionRow>(
      this.dataSource,
      `UPDATE console_sessions SET revoked_at = COALESCE(revoked_at, $3)
        WHERE id = $1 AND organization_id = $2
       RETURNING ${SESSION_COLUMNS}`,
      [id, organizationId, now],
    );
    return row;
  }
}
