import { Inject, Injectable, type OnApplicationShutdown } from '@nestjs/common';
import { Command, CommandRunner, Option } from 'nest-commander';
import type { ServiceConfig } from '@touchpoint/config';
import { FollowupsRpc, type RetentionReport } from '@touchpoint/contracts';
import type { Logger } from '@touchpoint/observability';
import { RpcClient } from '@touchpoint/runtime';
import type { CliConfig } from '../cli.config.js';
import { CLI_CONFIG } from '../cli.tokens.js';
import type { JsonOption } from '../commands/options.js';
import { CLI_LOGGER } from '../output/cli-logger.js';
import { CliOutput } from '../output/cli-output.js';

/** A pass can delete many rows in batches: wait this long for its answer, ms. */
const RETENTION_RPC_TIMEOUT_MS = 10 * 60_000;

/** The followups retention RPC (the CLI holds no retention rule). Connects on first use; closed when the command ends. */
@Injectable()
export class FollowupsRetentionClient implements OnApplicationShutdown {
  private rpc?: RpcClient;

  constructor(
    @Inject(CLI_CONFIG) private readonly config: CliConfig,
    @Inject(CLI_LOGGER) private readonly logger: Logger,
  ) {}

  async run(): Promise<RetentionReport> {
    this.rpc ??= new RpcClient(this.config as unknown as ServiceConfig, this.logger);
    return (await this.rpc.call('followups', FollowupsRpc.RetentionRun, {}, RETENTION_RPC_TIMEOUT_MS)).data;
  }

  async onApplicationShutdown(): Promise<void> {
    await this.rpc?.onApplicationShutdown();
  }
}

/**
 * `retention:run [--json]`: runs the follow-up retention pass now (seed 000 "Retention") and
 * prints what it deleted; `ran: false` when another pass held the lock. The k8s CronJob runs it daily.
 */
@Command({ name: 'retention:run', description: 'Run the follow-up retention pass now (finished enrollments, returns, processed triggers, old bulk jobs)' })
export class RetentionRunCommand extends CommandRunner {
  constructor(
    private readonly client: FollowupsRetentionClient,
    private readonly output: CliOutput,
  ) {
    super();
  }

  async run(_params: string[], options: JsonOption): Promise<void> {
    try {
      const report = await this.client.run();
      const text = report.ran ? `deleted ${report.enrollments} enrollments (${report.events} events, ${report.effects} effects), ${report.promises} returns, ${report.triggers} triggers, ${report.bulk_jobs} bulk jobs` : 'another retention pass is running; nothing done';
      this.output.success(report, options.json, text);
    } catch (err) {
      this.output.failure(err, options.json);
    }
  }

  @Option({ flags: '--json', description: 'Print one JSON object on stdout' })
  parseJson(): boolean {
    return true;
  }
}

export const FOLLOWUPS_CLI_PROVIDERS = [FollowupsRetentionClient, RetentionRunCommand];
