import { Injectable } from '@nestjs/common';
import { isEmail } from 'class-validator';
import { MEMBER_ROLES, type MemberRole } from '@touchpoint/contracts';
import { codePointLength } from '@touchpoint/text';
import { invalidField, notFound, PG_FOREIGN_KEY_VIOLATION, UUID_PATTERN } from '../accounts/accounts.errors.js';
import { type MemberRow, MembersRepository } from './members.repository.js';

/** Public view of a member. */
export interface MemberView {
  member_id: string;
  organization_id: string;
  email: string;
  name: string | null;
  role: MemberRole;
  active: boolean;
  /** True when this call created the member, false when it updated an existing one. */
  created?: boolean;
}

/** Longest member name we keep, characters (ours). */
export const MEMBER_NAME_MAX = 200;

/**
 * Members of an organization (DESIGN §3): an `admin` or an `operator`; each email is one member
 * per organization. A member who leaves is kept (inactive) because API keys remember their creator.
 */
@Injectable()
export class MembersService {
  constructor(private readonly members: MembersRepository) {}

  /**
   * Adds a member, or updates the role (and name, when given) of the member with that email, who
   * becomes active again (admin CLI contract `member:add`).
   * @throws AppError validation_failed naming `email`, `role` or `name`; not_found when the organization does not exist
   */
  async add(input: { organizationId: string; email: string; role: string; name?: string | null }): Promise<MemberView> {
    const email = (input.email ?? '').trim().toLowerCase();
    if (!isEmail(email)) throw invalidField('email', 'email must be an email address');
    const role = parseRole(input.role);
    const name = input.name?.trim() || null;
    if (name && codePointLength(name) > MEMBER_NAME_MAX) throw invalidField('name', `name must be at most ${MEMBER_NAME_MAX} characters`);
    if (!UUID_PATTERN.test(input.organizationId)) throw notFound('organization');
    try {
      const row = await this.members.upsert({ organizationId: input.organizationId, email, role, name });
      return { ...viewOf(row), created: row.created };
    } catch (err) {
      if ((err as { code?: string }).code === PG_FOREIGN_KEY_VIOLATION) throw notFound('organization');
      throw err;
    }
  }

  /**
   * The member `memberId` of `organizationId`.
   * @throws AppError not_found when the member is not in that organization
   */
  async get(organizationId: string, memberId: string): Promise<MemberView> {
    const row = UUID_PATTERN.test(memberId) && UUID_PATTERN.test(organizationId) ? await this.members.findInOrganization(organizationId, memberId) : undefined;
    if (!row) throw notFound('member');
    return viewOf(row);
  }

  /**
   * Changes a member's role or marks them as having left (`active: false`). A demoted or departed
   * admin's keys stop working on routes that need a key created by an admin, at once (the guard
   * reads the creator on every call).
   * @throws AppError validation_failed (`role`); not_found when the member is not in that organization
   */
  async update(organizationId: string, memberId: string, change: { role?: string; active?: boolean }): Promise<MemberView> {
    const role = change.role === undefined ? undefined : parseRole(change.role);
    const row = UUID_PATTERN.test(memberId) && UUID_PATTERN.test(organizationId) ? await this.members.update(organizationId, memberId, { role, active: change.active }) : undefined;
    if (!row) throw notFound('member');
    return viewOf(row);
  }
}

function parseRole(value: string): MemberRole {
  if (!(MEMBER_ROLES as readonly string[]).includes(value)) throw invalidField('role', `role must be one of ${MEMBER_ROLES.join(', ')}`);
  return value as MemberRole;
}

function viewOf(row: MemberRow): MemberView {
  return { member_id: row.id, organization_id: row.organization_id, email: row.email, name: row.name, role: row.role, active: row.active };
}
