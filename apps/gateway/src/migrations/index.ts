import type { EntitySchema, MigrationInterface, ObjectType } from 'typeorm';
import { OrganizationEntity } from '../organizations/entities/organization.entity.js';
import { CreateGatewayTables1764500000000 } from './1764500000000-CreateGatewayTables.js';
import { AddApiKeyImpersonation1764500000014 } from './1764500000014-AddApiKeyImpersonation.js';
import { CreateConsoleSessions1796156954600 } from './1796156954600-CreateConsoleSessions.js';

/** Entities of the gateway schema (explicit list: ESM has no globs). */
export const GatewayEntities: (ObjectType<unknown> | EntitySchema<unknown>)[] = [OrganizationEntity];

/** Migrations of the gateway schema, oldest first (the bus tables come from the platform). */
export const GatewayMigrations: (new () => MigrationInterface)[] = [CreateGatewayTables1764500000000, AddApiKeyImpersonation1764500000014, CreateConsoleSessions1796156954600];
