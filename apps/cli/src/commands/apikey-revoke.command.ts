import { Command, CommandRunner, Option } from 'nest-commander';
import { ApiKeysService } from '../../../gateway/src/api-keys/api-keys.service.js';
import { GatewayDatabase } from '../database/gateway-database.js';
import { CliOutput } from '../output/cli-output.js';
import type { JsonOption } from './options.js';

interface Options extends JsonOption {
  id?: string;
}

/** `apikey:revoke --id <api_key_id>` → `{api_key_id, revoked: true}`; the key fails with 401 from then on. */
@Command({ name: 'apikey:revoke', description: 'Revoke an API key at once' })
export class ApiKeyRevokeCommand extends CommandRunner {
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
      const key = await this.apiKeys.revoke(options.id ?? '', null);
      this.output.success({ api_key_id: key.id, revoked: true, revoked_at: key.revoked_at }, options.json, `API key ${key.id} revoked`);
    } catch (err) {
      this.output.failure(err, options.json);
    }
  }

  @Option({ flags: '--id <api_key_id>', description: 'API key id', required: true })
  parseId(value: string): string {
    return value;
  }

  @Option({ flags: '--json', description: 'Print one JSON object on stdout' })
  parseJson(): boolean {
    return true;
  }
}
