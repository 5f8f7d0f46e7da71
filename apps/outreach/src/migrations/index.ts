import type { EntitySchema, MigrationInterface } from 'typeorm';

/** Entities of the outreach schema (explicit list: ESM has no globs). */
export const OutreachEntities: (Function | EntitySchema<unknown>)[] = [];

/** Migrations of the outreach schema, oldest first (the bus tables come from the platform). */
export const OutreachMigrations: (new () => MigrationInterface)[] = [];
