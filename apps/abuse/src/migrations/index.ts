import type { EntitySchema, MigrationInterface, ObjectType } from 'typeorm';
import { CreateAbuseTables1764500000000 } from './1764500000000-CreateAbuseTables.js';

/** Entities of the abuse schema (explicit list: ESM has no globs). Raw SQL repositories: none yet. */
export const AbuseEntities: (ObjectType<unknown> | EntitySchema<unknown>)[] = [];

/** Migrations of the abuse schema, oldest first (the bus tables come from the platform). */
export const AbuseMigrations: (new () => MigrationInterface)[] = [CreateAbuseTables1764500000000];
