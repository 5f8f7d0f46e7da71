import type { EntitySchema, MigrationInterface } from 'typeorm';

/** Entities of the outbox-dispatcher schema (explicit list: ESM has no globs). */
export const OutboxDispatcherEntities: (Function | EntitySchema<unknown>)[] = [];

/** Migrations of the outbox-dispatcher schema, oldest first (the bus tables come from the platform). */
export const OutboxDispatcherMigrations: (new () => MigrationInterface)[] = [];
