import { Injectable } from '@nestjs/common';
import { codePointLength } from '@touchpoint/text';
import { invalidField, notFound, UUID_PATTERN } from '@touchpoint/database';
import type { OrganizationEntity } from './entities/organization.entity.js';
import { OrganizationsRepository } from './organizations.repository.js';

/** Longest organization name we accept, characters (ours: fits a dashboard header). */
export const ORGANIZATION_NAME_MAX = 200;

/** Public view of an organization. */
export interface OrganizationView {
  id: string;
  name: string;
  created_at: string;
}

/** Organizations (tenants, DESIGN §3): created by the admin CLI, read by their own API keys. */
@Injectable()
export class OrganizationsService {
  constructor(private readonly organizations: OrganizationsRepository) {}

  /**
   * Creates an organization.
   * @throws AppError validation_failed (`name`) when the trimmed name is empty or longer than ORGANIZATION_NAME_MAX
   */
  async create(name: string): Promise<OrganizationView> {
    const trimmed = (name ?? '').trim();
    if (!trimmed) throw invalidField('name', 'name must not be empty');
    if (codePointLength(trimmed) > ORGANIZATION_NAME_MAX) throw invalidField('name', `name must be at most ${ORGANIZATION_NAME_MAX} characters`);
    return viewOf(await this.organizations.insert(trimmed));
  }

  /**
   * The organization `id`.
   * @throws AppError not_found when there is none (a malformed id included)
   */
  async get(id: string): Promise<OrganizationView> {
    const row = UUID_PATTERN.test(id) ? await this.organizations.findById(id) : null;
    if (!row) throw notFound('organization');
    return viewOf(row);
  }
}

function viewOf(row: OrganizationEntity): OrganizationView {
  return { id: row.id, name: row.name, created_at: row.createdAt.toISOString() };
}
