import type { EntitySchema, MigrationInterface } from 'typeorm';

/** Entities of the followups schema (explicit list: ESM has no globs). */
export const FollowupsEntities: (Function | EntitySchema<unknown>)[] = [];

/** Migrations of the followups schema, oldest first (the bus tables come from the platform). */
export const FollowupsMigrations: (new () => MigrationInterface)[] = [];
