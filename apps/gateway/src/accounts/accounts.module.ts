import { Module } from '@nestjs/common';
import { ApiKeySecrets } from '../api-keys/api-key-secrets.js';
import { ApiKeysRepository } from '../api-keys/api-keys.repository.js';
import { ApiKeysService } from '../api-keys/api-keys.service.js';
import { MembersRepository } from '../members/members.repository.js';
import { MembersService } from '../members/members.service.js';
import { OrganizationsRepository } from '../organizations/organizations.repository.js';
import { OrganizationsService } from '../organizations/organizations.service.js';

/**
 * The tenancy rules (organizations, members, API keys), one place for each, used by the HTTP
 * routes and by the admin CLI alike. Needs a `DataSource` bound to the gateway schema and a
 * `Clock` from the host (PlatformModule in the gateway, the CLI's own module in apps/cli).
 */
@Module({
  providers: [OrganizationsRepository, OrganizationsService, MembersRepository, MembersService, ApiKeySecrets, ApiKeysRepository, ApiKeysService],
  exports: [OrganizationsService, MembersService, ApiKeysService],
})
export class AccountsModule {}
