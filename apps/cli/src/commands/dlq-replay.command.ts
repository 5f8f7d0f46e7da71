import { Command, CommandRunner, Option } from 'nest-commander';
import { SERVICES } from '@touchpoint/contracts';
import { CliOutput } from '../output/cli-output.js';
import { DeadLetters } from './dead-letters.js';
import { type JsonOption, parseList, parseService } from './options.js';

interface Options extends JsonOption {
  service?: string;
  eventIds?: string[];
}

/**
 * `dlq:replay --service <name> [--event-id <id> ...]` → `{service, replayed: [<event_id>]}`.
 * Without ids, every parked message goes back. Handlers are idempotent (inbox), so replaying one
 * that was in fact handled is harmless.
 */
@Command({ name: 'dlq:replay', description: "Move a service's dead-lettered messages back to its queue" })
export class DlqReplayCommand extends CommandRunner {
  constructor(
    private readonly deadLetters: DeadLetters,
    private readonly output: CliOutput,
  ) {
    super();
  }

  async run(_params: string[], options: Options): Promise<void> {
    try {
      const service = parseService(options.service);
      const replayed = await this.deadLetters.replay(service, options.eventIds ?? []);
      this.output.success({ service, replayed }, options.json, replayed.length ? `replayed ${replayed.length}: ${replayed.join(', ')}` : 'nothing to replay');
    } catch (err) {
      this.output.failure(err, options.json);
    }
  }

  @Option({ flags: '--service <name>', description: `Service: ${SERVICES.join(', ')}`, required: true })
  parseServiceOption(value: string): string {
    return value;
  }

  /** Repeatable (`--event-id a --event-id b`), variadic (`--event-id a b`) or comma-separated. */
  @Option({ flags: '--event-id <ids...>', name: 'eventIds', description: 'Only these event ids (default: all)' })
  parseEventId(value: string, previous: string[] | undefined): string[] {
    return [...(previous ?? []), ...parseList(value)];
  }

  @Option({ flags: '--json', description: 'Print one JSON object on stdout' })
  parseJson(): boolean {
    return true;
  }
}
