import { BaseConfig, IsString } from '@touchpoint/config';

/**
 * Environment of the admin CLI: the shared variables (DATABASE_URL, AMQP_URL, BUS_NAMESPACE,
 * DB_SCHEMA_PREFIX, LOG_LEVEL; see libs/config), so it reaches the same schemas and queues as the
 * services it administers, and who is running it.
 */
export class CliConfig extends BaseConfig {
  override LOG_LEVEL = 'warn';

  /** Who a hand-settled outbox entry is recorded as when `--actor` is not given: the login name (the shell's `USER`), else `cli`. */
  @IsString()
  USER = 'cli';
}
