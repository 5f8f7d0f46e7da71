import { Command, CommandRunner, Option } from 'nest-commander';
import { MembersService } from '../../../gateway/src/members/members.service.js';
import { GatewayDatabase } from '../database/gateway-database.js';
import { CliOutput } from '../output/cli-output.js';
import type { JsonOption } from './options.js';

interface Options extends JsonOption {
  org?: string;
  member?: string;
}

/**
 * `member:remove --org <id> --member <id>` → `{id, organization_id, active: false,
 * revoked_api_key_ids}`: the member leaves the organization and every key they created stops at once.
 */
@Command({ name: 'member:remove', description: 'Remove a member from an organization and revoke every API key they created' })
export class MemberRemoveCommand extends CommandRunner {
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
      const member = await this.members.remove(options.org ?? '', options.member ?? '');
      this.output.success(
        { id: member.id, organization_id: member.organization_id, email: member.email, active: member.active, revoked_api_key_ids: member.revoked_api_key_ids },
        options.json,
        `member ${member.id} (${member.email}) removed from ${member.organization_id}; ${member.revoked_api_key_ids.length} API key(s) revoked`,
      );
    } catch (err) {
      this.output.failure(err, options.json);
    }
  }

  @Option({ flags: '--org <organization_id>', description: 'Organization id', required: true })
  parseOrg(value: string): string {
    return value;
  }

  @Option({ flags: '--member <member_id>', description: 'The member to remove', required: true })
  parseMember(value: string): string {
    return value;
  }

  @Option({ flags: '--json', description: 'Print one JSON object on stdout' })
  parseJson(): boolean {
    return true;
  }
}
