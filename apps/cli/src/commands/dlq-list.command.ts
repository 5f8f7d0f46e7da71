import { Command, CommandRunner, Option } from 'nest-commander';
import { SERVICES } from '@touchpoint/contracts';
import { CliOutput } from '../output/cli-output.js';
import { DeadLetters } from './dead-letters.js';
import { badOption, type JsonOption, parseService } from './options.js';

/** Default and largest `--limit` of dlq:list (ours: a screenful for people, bounded for scripts). */
const DEFAULT_LIMIT = 100;
const MAX_LIMIT = 10_000;

interface Options extends JsonOption {
  service?: string;
  limit?: number;
}

/**
 * `dlq:list --service <name> [--limit N]` →
 * `{service, dead_letters: [{event_id, type, organization_id, reason, error, dead_lettered_at, attempts}]}`.
 */
@Command({ name: 'dlq:list', description: "List a service's dead-lettered messages (they stay parked)" })
export class DlqListCommand extends CommandRunner {
  constructor(
    private readonly deadLetters: DeadLetters,
    private readonly output: CliOutput,
  ) {
    super();
  }

  async run(_params: string[], options: Options): Promise<void> {
    try {
      const service = parseService(options.service);
      const limit = options.limit ?? DEFAULT_LIMIT;
      if (!Number.isInteger(limit) || limit < 1 || limit > MAX_LIMIT) throw badOption('limit', `must be an integer from 1 to ${MAX_LIMIT}`);
      const deadLetters = await this.deadLetters.list(service, limit);
      const human = deadLetters.length ? deadLetters.map((d) => `${d.event_id}  ${d.type}  ${d.reason ?? ''}  attempts=${d.attempts ?? '?'}  ${d.error ?? ''}`).join('\n') : `no dead letters for ${service}`;
      this.output.success({ service, dead_letters: deadLetters }, options.json, human);
    } catch (err) {
      this.output.failure(err, options.json);
    }
  }

  @Option({ flags: '--service <name>', description: `Service: ${SERVICES.join(', ')}`, required: true })
  parseServiceOption(value: string): string {
    return value;
  }

  @Option({ flags: '--limit <n>', description: `Most messages to list (default ${DEFAULT_LIMIT})` })
  parseLimit(value: string): number {
    return /^\d+$/.test(value) ? Number(value) : Number.NaN;
  }

  @Option({ flags: '--json', description: 'Print one JSON object on stdout' })
  parseJson(): boolean {
    return true;
  }
}
