import { Command, CommandRunner, Option } from 'nest-commander';
import { OrganizationsService } from '../../../gateway/src/organizations/organizations.service.js';
import { GatewayDatabase } from '../database/gateway-database.js';
import { CliOutput } from '../output/cli-output.js';
import type { JsonOption } from './options.js';

interface Options extends JsonOption {
  name?: string;
}

/** `org:create --name <name>` → `{id, name}` (the organization's own id is `id`, as in its REST view). */
@Command({ name: 'org:create', description: 'Create an organization (a tenant)' })
export class OrgCreateCommand extends CommandRunner {
  constructor(
    private readonly database: GatewayDatabase,
    private readonly organizations: OrganizationsService,
    private readonly output: CliOutput,
  ) {
    super();
  }

  async run(_params: string[], options: Options): Promise<void> {
    try {
      await this.database.connect();
      const org = await this.organizations.create(options.name ?? '');
      this.output.success({ id: org.id, name: org.name }, options.json, `organization ${org.id} created (${org.name})`);
    } catch (err) {
      this.output.failure(err, options.json);
    }
  }

  @Option({ flags: '--name <name>', description: 'Organization name', required: true })
  parseName(value: string): string {
    return value;
  }

  @Option({ flags: '--json', description: 'Print one JSON object on stdout' })
  parseJson(): boolean {
    return true;
  }
}
