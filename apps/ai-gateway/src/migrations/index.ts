import type { EntitySchema, MigrationInterface } from 'typeorm';

/** Entities of the ai-gateway schema (explicit list: ESM has no globs). */
export const AiGatewayEntities: (Function | EntitySchema<unknown>)[] = [];

/** Migrations of the ai-gateway schema, oldest first (the bus tables come from the platform). */
export const AiGatewayMigrations: (new () => MigrationInterface)[] = [];
