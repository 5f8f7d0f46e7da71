import { Command, CommandRunner, Option } from 'nest-commander';
import { API_SCOPES } from '@touchpoint/contracts';
import { ApiKeysService } from '../../../gateway/src/api-keys/api-keys.service.js';
import { GatewayDatabase } from '../database/gateway-database.js';
import { CliOutput } from '../output/cli-output.js';
import { type JsonOption, parseList } from './options.js';

interface Options extends JsonOption {
  org?: string;
  member?: string;
  scopes?: string[];
  name?: string;
  impersonatedBy?: string;
}

/**
 * `apikey:create --org <id> --member <id> --scopes a,b [--name <label>] [--impersonated-by <who>]` →
 * `{id, secret, scopes, …}` (the key's own id is `id`); the secret is printed this once and stored only hashed. With
 * `--impersonated-by`, the key is issued to that support person acting as the member: an
 * impersonated session, which may not approve or reject outreach drafts (seed 003 §4.5).
 */
@Command({ name: 'apikey:create', description: 'Create an API key for a member (prints the secret once)' })
export class ApiKeyCreateCommand extends CommandRunner {
  constructor(
    private readonly database: GatewayDatabase,
    private readonly apiKeys: ApiKeysService,
    private readonly output: CliOutput,
  ) {
    super();
  }

  async run(_params: string[], options: Options): Promise<void> {
    try {
      await this.database.connect();
      const { key, secret } = await this.apiKeys.create({
        organizationId: options.org ?? '',
        createdByMemberId: options.member ?? '',
        scopes: options.scopes ?? [],
        name: options.name ?? 'cli',
        impersonatedBy: options.impersonatedBy,
      });
      this.output.success({ id: key.id, secret, scopes: key.scopes, organization_id: key.organization_id, name: key.name, impersonated_by: key.impersonated_by }, options.json, `API key ${key.id} (${key.scopes.join(', ')})\nsecret (shown once, store it now): ${secret}`);
    } catch (err) {
      this.output.failure(err, options.json);
    }
  }

  @Option({ flags: '--org <organization_id>', description: 'Organization id', required: true })
  parseOrg(value: string): string {
    return value;
  }

  @Option({ flags: '--member <member_id>', description: 'The member who creates the key (admin or operator)', required: true })
  parseMember(value: string): string {
    return value;
  }

  @Option({ flags: '--scopes <scopes>', description: `Comma-separated: ${API_SCOPES.join(', ')}`, required: true })
  parseScopes(value: string): string[] {
    return parseList(value);
  }

  @Option({ flags: '--name <label>', description: 'A label for the key (default "cli")' })
  parseName(value: string): string {
    return value;
  }

  @Option({ flags: '--impersonated-by <who>', description: 'Issue the key to this support person acting as the member (an impersonated session)' })
  parseImpersonatedBy(value: string): string {
    return value;
  }

  @Option({ flags: '--json', description: 'Print one JSON object on stdout' })
  parseJson(): boolean {
    return true;
  }
}
