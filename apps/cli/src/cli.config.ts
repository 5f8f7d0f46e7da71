import { BaseConfig } from '@touchpoint/config';

/**
 * Environment of the admin CLI: the shared variables only (DATABASE_URL, AMQP_URL, BUS_NAMESPACE,
 * DB_SCHEMA_PREFIX, LOG_LEVEL; see libs/config), so it reaches the same schemas and queues as the
 * services it administers.
 */
export class CliConfig extends BaseConfig {
  override LOG_LEVEL = 'warn';
}
