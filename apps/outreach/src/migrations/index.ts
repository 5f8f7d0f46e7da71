import type { EntitySchema, MigrationInterface, ObjectType } from 'typeorm';
import { CreateOutreachTables1764800000000 } from './1764800000000-CreateOutreachTables.js';
import { AddDecisionReplyRef1764800000001 } from './1764800000001-AddDecisionReplyRef.js';
import { CreateEmailThreads1764800000010 } from './1764800000010-CreateEmailThreads.js';
import { OneLiveEnrollmentPerPersonId1764800000014 } from './1764800000014-OneLiveEnrollmentPerPersonId.js';
import { CreatePersonAddressesAndScheduleMoves1796130501193417 } from './1796130501193417-CreatePersonAddressesAndScheduleMoves.js';

/** Entities of the outreach schema (explicit list: ESM has no globs). Outreach uses SQL repositories only. */
export const OutreachEntities: (ObjectType<unknown> | EntitySchema<unknown>)[] = [];

/** Migrations of the outreach schema, oldest first (the bus tables come from the platform). */
export const OutreachMigrations: (new () => MigrationInterface)[] = [CreateOutreachTables1764800000000, AddDecisionReplyRef1764800000001, CreateEmailThreads1764800000010, OneLiveEnrollmentPerPersonId1764800000014, CreatePersonAddressesAndScheduleMoves1796130501193417];
