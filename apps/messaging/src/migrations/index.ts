import type { EntitySchema, MigrationInterface } from 'typeorm';

/** Entities of the messaging schema (explicit list: ESM has no globs). */
export const MessagingEntities: (Function | EntitySchema<unknown>)[] = [];

/** Migrations of the messaging schema, oldest first (the bus tables come from the platform). */
export const MessagingMigrations: (new () => MigrationInterface)[] = [];
