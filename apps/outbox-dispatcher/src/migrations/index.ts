import type { EntitySchema, MigrationInterface, ObjectType } from 'typeorm';
import { CreateOutboxTables1764500000000 } from './1764500000000-CreateOutboxTables.js';
import { CreateOutboxCancellations1764900000000 } from './1764900000000-CreateOutboxCancellations.js';
import { CreateProspectCapAndAccounts1765100000000 } from './1765100000000-CreateProspectCapAndAccounts.js';
import { CreateLinkedinRelations1765100000001 } from './1765100000001-CreateLinkedinRelations.js';
import { IndexPendingByRecipient1765300000000 } from './1765300000000-IndexPendingByRecipient.js';
import { AddMetaFidelity1796130561208602 } from './1796130561208602-AddMetaFidelity.js';
import { RecordSuppressionNotes1796172528645801 } from './1796172528645801-RecordSuppressionNotes.js';
import { AddReplyHolds1796200000000000 } from './1796200000000000-AddReplyHolds.js';

/** Entities of the outbox-dispatcher schema (explicit list: ESM has no globs). SQL lives in repositories. */
export const OutboxDispatcherEntities: (ObjectType<unknown> | EntitySchema<unknown>)[] = [];

/** Migrations of the outbox-dispatcher schema, oldest first (the bus tables come from the platform). */
export const OutboxDispatcherMigrations: (new () => MigrationInterface)[] = [
  CreateOutboxTables1764500000000,
  CreateOutboxCancellations1764900000000,
  CreateProspectCapAndAccounts1765100000000,
  CreateLinkedinRelations1765100000001,
  IndexPendingByRecipient1765300000000,
  AddMetaFidelity1796130561208602,
  RecordSuppressionNotes1796172528645801,
  AddReplyHolds1796200000000000,
];
