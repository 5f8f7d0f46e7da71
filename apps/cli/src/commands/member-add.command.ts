import { Command, CommandRunner, Option } from 'nest-commander';
import { MEMBER_ROLES } from '@touchpoint/contracts';
import { MembersService } from '../../../gateway/src/members/members.service.js';
import { GatewayDatabase } from '../database/gateway-database.js';
import { CliOutput } from '../output/cli-output.js';
import type { JsonOption } from './options.js';

interface Options extends JsonOption {
  org?: string;
  email?: string;
  role?: string;
  name?: string;
}

/**
 * `member:add --org <id> --email <email> --role admin|operator [--name <name>]` →
 * `{id, organization_id, role, email, created}` (the member's own id is `id`). The same email again updates that member's role.
 */
@Command({ name: 'member:add', description: 'Add a member to an organization, or change the role of the member with that email' })
export class MemberAddCommand extends CommandRunner {
  constructor(
    private readonly database: GatewayDatabase,
    private readonly members: MembersService,
    private readonly output: CliOutput,
  ) {
    super();
  }

  async run(_params: string[], options: Options): Promise<void> {
    try {
      await this.database.connect();
      const member = await this.members.add({ organizationId: options.org ?? '', email: options.email ?? '', role: options.role ?? '', name: options.name });
      this.output.success(
        { id: member.id, organization_id: member.organization_id, role: member.role, email: member.email, created: member.created },
        options.json,
        `member ${member.id} (${member.email}) is ${member.role} of ${member.organization_id}${member.created ? '' : ' (updated)'}`,
      );
    } catch (err) {
      this.output.failure(err, options.json);
    }
  }

  @Option({ flags: '--org <organization_id>', description: 'Organization id', required: true })
  parseOrg(value: string): string {
    return value;
  }

  @Option({ flags: '--email <email>', description: 'Email (one member per email and organization)', required: true })
  parseEmail(value: string): string {
    return value;
  }

  @Option({ flags: '--role <role>', description: `Role: ${MEMBER_ROLES.join(' | ')}`, required: true })
  parseRole(value: string): string {
    return value;
  }

  @Option({ flags: '--name <name>', description: 'Display name' })
  parseName(value: string): string {
    return value;
  }

  @Option({ flags: '--json', description: 'Print one JSON object on stdout' })
  parseJson(): boolean {
    return true;
  }
}
