import type { EntitySchema, MigrationInterface } from 'typeorm';

/** Entities of the abuse schema (explicit list: ESM has no globs). */
export const AbuseEntities: (Function | EntitySchema<unknown>)[] = [];

/** Migrations of the abuse schema, oldest first (the bus tables come from the platform). */
export const AbuseMigrations: (new () => MigrationInterface)[] = [];
