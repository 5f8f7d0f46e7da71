import { Inject, Injectable, type OnApplicationShutdown } from '@nestjs/common';
import { Command, CommandRunner, Option } from 'nest-commander';
import type { ServiceConfig } from '@touchpoint/config';
import { type OutboxEntryView, type OutboxResolveData, type OutboxResolveResult, OutboxRpc } from '@touchpoint/contracts';
import type { Logger } from '@touchpoint/observability';
import { RpcClient } from '@touchpoint/runtime';
import type { CliConfig } from '../cli.config.js';
import { CLI_CONFIG } from '../cli.tokens.js';
import { badOption, type JsonOption } from '../commands/options.js';
import { CLI_LOGGER } from '../output/cli-logger.js';
import { CliOutput } from '../output/cli-output.js';

/**
 * Ambiguous outbox entries, over the dispatcher's RPC (the CLI holds no outbox rule). Connects to
 * the broker on first use; closed when the command ends.
 */
@Injectable()
export class OutboxClient implements OnApplicationShutdown {
  private rpc?: RpcClient;

  constructor(
    @Inject(CLI_CONFIG) private readonly config: CliConfig,
    @Inject(CLI_LOGGER) private readonly logger: Logger,
  ) {}

  listAmbiguous(organizationId: string | undefined, limit?: number): Promise<{ items: OutboxEntryView[] }> {
    return this.client().call('outbox-dispatcher', OutboxRpc.ListAmbiguous, { organization_id: organizationId, limit });
  }

  resolve(entryId: string, status: OutboxResolveData['status'], note: string, actor: string, organizationId?: string): Promise<OutboxResolveResult> {
    return this.client().call('outbox-dispatcher', OutboxRpc.ResolveAmbiguous, { entry_id: entryId, status, note, actor, organization_id: organizationId });
  }

  async onApplicationShutdown(): Promise<void> {
    await this.rpc?.onApplicationShutdown();
  }

  private client(): RpcClient {
    this.rpc ??= new RpcClient(this.config as unknown as ServiceConfig, this.logger);
    return this.rpc;
  }
}

function describeEntry(e: OutboxEntryView): string {
  const context = Object.entries(e.log_context ?? {})
    .map(([k, v]) => `${k}=${v}`)
    .join(' ');
  return `${e.id}  ${e.organization_id}  ${e.channel} → ${e.to}  ${e.payload_type}  key=${e.idempotency_key}  since ${e.updated_at}${context ? `  ${context}` : ''}`;
}

/** `outbox:ambiguous:list [--org <id>] [--limit N]` → `{items: [entry…]}`, oldest first (seed 004: kept for triage). */
@Command({ name: 'outbox:ambiguous:list', description: 'List outbox sends whose outcome is unknown (never retried automatically)' })
export class OutboxAmbiguousListCommand extends CommandRunner {
  constructor(
    private readonly outbox: OutboxClient,
    private readonly output: CliOutput,
  ) {
    super();
  }

  async run(_params: string[], options: JsonOption & { org?: string; limit?: number }): Promise<void> {
    try {
      if (options.limit !== undefined && !(options.limit >= 1)) throw badOption('limit', 'must be a positive integer');
      const page = await this.outbox.listAmbiguous(options.org, options.limit);
      this.output.success(page, options.json, page.items.length ? `${page.items.map(describeEntry).join('\n')}\n${page.items.length} ambiguous` : 'no ambiguous entries');
    } catch (err) {
      this.output.failure(err, options.json);
    }
  }

  @Option({ flags: '--org <id>', description: 'Only this organization' })
  parseOrg(value: string): string {
    return value;
  }

  @Option({ flags: '--limit <n>', description: 'Most entries to list (default 100)' })
  parseLimit(value: string): number {
    return /^\d+$/.test(value) ? Number(value) : Number.NaN;
  }

  @Option({ flags: '--json', description: 'Print one JSON object on stdout' })
  parseJson(): boolean {
    return true;
  }
}

/**
 * `outbox:ambiguous:resolve --id <entry> --status accepted|rejected --note <text> [--org <id>] [--actor <who>]`
 * → `{outcome, entry_id, status}`. `rejected` fails the entry; both publish `outbox.entry.resolved`.
 */
@Command({ name: 'outbox:ambiguous:resolve', description: 'Settle an ambiguous outbox send by hand, with a note' })
export class OutboxAmbiguousResolveCommand extends CommandRunner {
  constructor(
    private readonly outbox: OutboxClient,
    private readonly output: CliOutput,
    @Inject(CLI_CONFIG) private readonly config: CliConfig,
  ) {
    super();
  }

  async run(_params: string[], options: JsonOption & { id?: string; status?: string; note?: string; org?: string; actor?: string }): Promise<void> {
    try {
      if (!options.id) throw badOption('id', 'is required');
      if (options.status !== 'accepted' && options.status !== 'rejected') throw badOption('status', 'must be accepted or rejected');
      if (!options.note || options.note.trim() === '') throw badOption('note', 'is required');
      const result = await this.outbox.resolve(options.id, options.status, options.note, options.actor ?? this.config.USER, options.org);
      const human = `${result.entry_id}: ${result.outcome}${result.status ? ` (${result.status})` : ''}`;
      if (result.outcome === 'resolved' || result.outcome === 'resolved_failed') this.output.success(result, options.json, human);
      else {
        this.output.success(result, options.json, human);
        process.exitCode = 1;
      }
    } catch (err) {
      this.output.failure(err, options.json);
    }
  }

  @Option({ flags: '--id <entry>', description: 'The outbox entry id', required: true })
  parseId(value: string): string {
    return value;
  }

  @Option({ flags: '--status <status>', description: 'accepted (it was delivered) or rejected (it was not)', required: true })
  parseStatus(value: string): string {
    return value;
  }

  @Option({ flags: '--note <text>', description: 'Why (kept on the entry)', required: true })
  parseNote(value: string): string {
    return value;
  }

  @Option({ flags: '--org <id>', description: 'Refuse unless the entry belongs to this organization' })
  parseOrg(value: string): string {
    return value;
  }

  @Option({ flags: '--actor <who>', description: 'Who resolves (default $USER)' })
  parseActor(value: string): string {
    return value;
  }

  @Option({ flags: '--json', description: 'Print one JSON object on stdout' })
  parseJson(): boolean {
    return true;
  }
}

export const OUTBOX_CLI_PROVIDERS = [OutboxClient, OutboxAmbiguousListCommand, OutboxAmbiguousResolveCommand];
