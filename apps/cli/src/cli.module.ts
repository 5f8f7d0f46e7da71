import { type DynamicModule, Global, Module } from '@nestjs/common';
import { DataSource } from 'typeorm';
import type { Logger } from '@touchpoint/observability';
import { Clock } from '@touchpoint/time';
import { AccountsModule } from '../../gateway/src/accounts/accounts.module.js';
import type { CliConfig } from './cli.config.js';
import { CLI_CONFIG } from './cli.tokens.js';
import { ApiKeyCreateCommand } from './commands/apikey-create.command.js';
import { ApiKeyRevokeCommand } from './commands/apikey-revoke.command.js';
import { DeadLetters } from './commands/dead-letters.js';
import { DlqListCommand } from './commands/dlq-list.command.js';
import { DlqReplayCommand } from './commands/dlq-replay.command.js';
import { MemberAddCommand } from './commands/member-add.command.js';
import { MemberRemoveCommand } from './commands/member-remove.command.js';
import { MigrateCommand } from './commands/migrate.command.js';
import { OrgCreateCommand } from './commands/org-create.command.js';
import { OUTREACH_CLI_PROVIDERS } from './outreach/outreach-drafts.commands.js';
import { OUTREACH_PROSPECT_CAP_CLI_PROVIDERS } from './outreach/outreach-prospect-cap.commands.js';
import { OUTBOX_CLI_PROVIDERS } from './outbox/outbox-ambiguous.commands.js';
import { FOLLOWUPS_CLI_PROVIDERS } from './followups/followups-retention.command.js';
import { GatewayDatabase } from './database/gateway-database.js';
import { Migrator } from './migrate/migrator.js';
import { CLI_LOGGER } from './output/cli-logger.js';
import { CliOutput } from './output/cli-output.js';

/**
 * What the gateway's tenancy rules (AccountsModule) need from their host, given by the CLI instead
 * of the platform: the gateway schema's DataSource (connected lazily) and the clock.
 */
@Global()
@Module({})
class CliPlatformModule {
  static forRoot(config: CliConfig, logger: Logger): DynamicModule {
    return {
      module: CliPlatformModule,
      providers: [{ provide: CLI_CONFIG, useValue: config }, { provide: CLI_LOGGER, useValue: logger }, GatewayDatabase, { provide: DataSource, useFactory: (database: GatewayDatabase) => database.dataSource, inject: [GatewayDatabase] }, Clock, CliOutput],
      exports: [CLI_CONFIG, CLI_LOGGER, GatewayDatabase, DataSource, Clock, CliOutput],
    };
  }
}

/** The admin CLI (DESIGN §8): one provider per command. */
@Module({})
export class CliModule {
  static forRoot(config: CliConfig, logger: Logger): DynamicModule {
    return {
      module: CliModule,
      imports: [CliPlatformModule.forRoot(config, logger), AccountsModule],
      providers: [
        Migrator,
        DeadLetters,
        OrgCreateCommand,
        MemberAddCommand,
        MemberRemoveCommand,
        ApiKeyCreateCommand,
        ApiKeyRevokeCommand,
        MigrateCommand,
        DlqListCommand,
        DlqReplayCommand,
        ...OUTREACH_CLI_PROVIDERS,
        ...OUTREACH_PROSPECT_CAP_CLI_PROVIDERS,
        ...OUTBOX_CLI_PROVIDERS,
        ...FOLLOWUPS_CLI_PROVIDERS,
      ],
    };
  }
}
