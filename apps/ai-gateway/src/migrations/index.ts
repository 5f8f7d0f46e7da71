import type { EntitySchema, MigrationInterface, ObjectType } from 'typeorm';
import { CreateAiTables1764600000000 } from './1764600000000-CreateAiTables.js';

/** Entities of the ai-gateway schema (explicit list: ESM has no globs). Its SQL is hand-written in the repositories. */
export const AiGatewayEntities: (ObjectType<unknown> | EntitySchema<unknown>)[] = [];

/** Migrations of the ai-gateway schema, oldest first (the bus tables come from the platform). */
export const AiGatewayMigrations: (new () => MigrationInterface)[] = [CreateAiTables1764600000000];
