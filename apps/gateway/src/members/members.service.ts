import { Inject, Injectable } from '@nestjs/common';
import { isEmail } from 'class-validator';
import { MEMBER_ROLES, type MemberRole } from '@touchpoint/contracts';
import { AppError, ErrorCode } from '@touchpoint/errors';
import { Clock } from '@touchpoint/time';
import { codePointLength } from '@touchpoint/text';
import { invalidField, notFound, PG_FOREIGN_KEY_VIOLATION, UUID_PATTERN } from '@touchpoint/database';
import { type MemberRow, MembersRepository } from './members.repository.js';

/** Public view of a member. */
export interface MemberView {
  id: string;
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
  constructor(
    private readonly members: MembersRepository,
    @Inject(Clock) private readonly clock: Clock,
  ) {}

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
   * The member `memberId` of `organizationId` when they are a current member: who acts (approves,
   * rejects) in the organization's name must be one (seed 003 §4.5: approved_by records a member).
   * @throws AppError not_found when the member is not in that organization; forbidden when they left
   */
  async current(organizationId: string, memberId: string): Promise<MemberView> {
    const member = await this.get(organizationId, memberId);
    if (!member.active) throw new AppError(ErrorCode.Forbidden, 'the member has left the organization');
    return member;
  }

  /** The organization's members, oldest first, those who left included (`active: false`). */
  async list(organizationId: string): Promise<MemberView[]> {
    if (!UUID_PATTERN.test(organizationId)) return [];
    return (await this.members.listByOrganization(organizationId)).map(viewOf);
  }

  /**
   * Removes a member from the organization: they are kept as having left (`active: false`, so keys
   * and records still name them) and every API key they created is revoked in the same
   * transaction, so each answers 401 from the next request on. Removing a member who already left
   * answers the same (idempotent). `member:add` with their email makes them a member again; their
   * old keys stay revoked.
   * @throws AppError not_found when the member is not in that organization; last_admin (409) when
   *   they are its only active admin (nobody could manage members or keys afterwards)
   */
  async remove(organizationId: string, memberId: string): Promise<MemberView & { revoked_api_key_ids: string[] }> {
    const row = UUID_PATTERN.test(memberId) && UUID_PATTERN.test(organizationId) ? await this.members.remove(organizationId, memberId, this.clock.now()) : undefined;
    if (row === 'last_admin') throw new AppError(ErrorCode.LastAdmin, 'the organization’s only active admin cannot be removed; make another member admin first', { member_id: memberId });
    if (!row) throw notFound('member');
    return { ...viewOf(row), revoked_api_key_ids: row.revoked_api_key_ids };
  }

  /**
   * Changes a member's role or marks them as having left (`active: false`). At once (the guard
   * reads the creator on every call): a demoted admin's keys lose every admin-scope route and those
   * needing a key created by an admin; a departed member's keys are refused everywhere (403).
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
  return { id: row.id, organization_id: row.organization_id, email: row.email, name: row.name, role: row.role, active: row.active };
}
