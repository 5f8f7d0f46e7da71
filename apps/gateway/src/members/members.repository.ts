import { Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import type { MemberRole } from '@touchpoint/contracts';
import { rowsOf } from '@touchpoint/database';

/** A member row as the repository returns it. */
export interface MemberRow {
  id: string;
  organization_id: string;
  email: string;
  name: string | null;
  role: MemberRole;
  active: boolean;
  created_at: Date;
  updated_at: Date;
}

const MEMBER_COLUMNS = 'id, organization_id, email, name, role, active, created_at, updated_at';

/** Every statement on `members`. */
@Injectable()
export class MembersRepository {
  constructor(private readonly dataSource: DataSource) {}

  /**
   * Adds a member, or, when the email is already in the organization, updates that member's role
   * (and name when given) and marks them active again. One statement, so two concurrent adds of
   * the same email cannot both insert.
   */
  async upsert(input: { organizationId: string; email: string; role: MemberRole; name: string | null }): Promise<MemberRow & { created: boolean }> {
    const [row] = await rowsOf<MemberRow & { created: boolean }>(
      this.dataSource,
      `INSERT INTO members (organization_id, email, name, role)
       VALUES ($1, $2, $3, $4)
       ON CONFLICT (organization_id, email) DO UPDATE
         SET role = EXCLUDED.role,
             name = COALESCE(EXCLUDED.name, members.name),
             active = true,
             updated_at = now()
       -- xmax = 0 only on a freshly inserted row version
       RETURNING ${MEMBER_COLUMNS}, (xmax = 0) AS created`,
      [input.organizationId, input.email, input.name, input.role],
    );
    return row!;
  }

  async findInOrganization(organizationId: string, memberId: string): Promise<MemberRow | undefined> {
    const [row] = await rowsOf<MemberRow>(this.dataSource, `SELECT ${MEMBER_COLUMNS} FROM members WHERE organization_id = $1 AND id = $2`, [organizationId, memberId]);
    return row;
  }

  /** The organization's members, oldest first (those who left included). */
  listByOrganization(organizationId: string): Promise<MemberRow[]> {
    return rowsOf<MemberRow>(this.dataSource, `SELECT ${MEMBER_COLUMNS} FROM members WHERE organization_id = $1 ORDER BY created_at, id`, [organizationId]);
  }

  /**
   * Removes a member: marks them as having left and revokes every key they created, in one
   * transaction, so no key of theirs outlives the removal. Revoking twice keeps the first instant.
   * Undefined when the member is not in that organization.
   */
  async remove(organizationId: string, memberId: string, now: Date): Promise<(MemberRow & { revoked_api_key_ids: string[] }) | 'last_admin' | undefined> {
    return this.dataSource.transaction(async (manager) => {
      // Every active admin row locked, so two admins removing each other at once cannot both pass:
      // the second re-reads after the first commits and finds itself the last one.
      const admins = await rowsOf<{ id: string }>(manager, `SELECT id FROM members WHERE organization_id = $1 AND role = 'admin' AND active ORDER BY id FOR UPDATE`, [organizationId]);
      if (admins.length === 1 && admins[0]!.id === memberId) return 'last_admin';
      const [row] = await rowsOf<MemberRow>(manager, `UPDATE members SET active = false, updated_at = $3 WHERE organization_id = $1 AND id = $2 RETURNING ${MEMBER_COLUMNS}`, [organizationId, memberId, now]);
      if (!row) return undefined;
      const keys = await rowsOf<{ id: string }>(manager, `UPDATE api_keys SET revoked_at = $3 WHERE organization_id = $1 AND created_by_member_id = $2 AND revoked_at IS NULL RETURNING id`, [organizationId, memberId, now]);
      return { ...row, revoked_api_key_ids: keys.map((k) => k.id) };
    });
  }

  /** Changes role and/or active flag; undefined fields keep their value. */
  async update(organizationId: string, memberId: string, change: { role?: MemberRole; active?: boolean }): Promise<MemberRow | undefined> {
    const [row] = await rowsOf<MemberRow>(
      this.dataSource,
      `UPDATE members
          SET role = COALESCE($3, role), active = COALESCE($4, active), updated_at = now()
        WHERE organization_id = $1 AND id = $2
       RETURNING ${MEMBER_COLUMNS}`,
      [organizationId, memberId, change.role ?? null, change.active ?? null],
    );
    return row;
  }
}
