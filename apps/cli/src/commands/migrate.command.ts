import { Command, CommandRunner, Option } from 'nest-commander';
import { SERVICES } from '@touchpoint/contracts';
import { Migrator } from '../migrate/migrator.js';
import { CliOutput } from '../output/cli-output.js';
import { type JsonOption, parseService } from './options.js';

interface Options extends JsonOption {
  service?: string;
}

/** `migrate [--service <name>]` → `{migrated: {<service>: [<migration names applied now>]}}`. */
@Command({ name: 'migrate', description: "Run every service's database migrations (or one service's)" })
export class MigrateCommand extends CommandRunner {
  constructor(
    private readonly migrator: Migrator,
    private readonly output: CliOutput,
  ) {
    super();
  }

  async run(_params: string[], options: Options): Promise<void> {
    try {
      const services = options.service === undefined ? [] : [parseService(options.service)];
      const migrated = await this.migrator.migrate(services);
      const human = Object.entries(migrated)
        .map(([service, names]) => `${service}: ${names?.length ? names.join(', ') : 'up to date'}`)
        .join('\n');
      this.output.success({ migrated }, options.json, human);
    } catch (err) {
      this.output.failure(err, options.json);
    }
  }

  @Option({ flags: '--service <name>', description: `Only this service: ${SERVICES.join(', ')}` })
  parseServiceOption(value: string): string {
    return value;
  }

  @Option({ flags: '--json', description: 'Print one JSON object on stdout' })
  parseJson(): boolean {
    return true;
  }
}
