import type { ServiceConfig } from '@touchpoint/config';
import type { ServiceName } from '@touchpoint/contracts';
import type { EntitySchema, MigrationInterface, ObjectType } from 'typeorm';

/** Injection token of the validated config object of the running service. */
export const APP_CONFIG = Symbol('touchpoint:config');
/** Injection token of the pino logger. */
export const LOGGER = Symbol('touchpoint:logger');
/** Injection token of the ServiceDefinition. */
export const SERVICE_DEFINITION = Symbol('touchpoint:service');

/** What a service tells the runtime about itself. */
export interface ServiceDefinition<C extends ServiceConfig = ServiceConfig> {
  service: ServiceName;
  config: C;
  /** Explicit entity classes (no globs: ESM). */
  entities: (ObjectType<unknown> | EntitySchema<unknown>)[];
  /** Explicit migrations, oldest first; the bus tables migration is added in front. */
  migrations: (new () => MigrationInterface)[];
  /** Whether to run the RPC server (default true). */
  rpc?: boolean;
}

/** Schema name of a service under a config's prefix. */
export function schemaOf(schemaBase: string, config: ServiceConfig): string {
  return `${config.DB_SCHEMA_PREFIX}${schemaBase}`;
}
