import type { EntitySchema, MigrationInterface, ObjectType } from 'typeorm';
import { CreateMessagingTables1764500000000 } from './1764500000000-CreateMessagingTables.js';
import { CreateInboundReceipts1764510000000 } from './1764510000000-CreateInboundReceipts.js';
import { AddNotificationRequestHash1764520000000 } from './1764520000000-AddNotificationRequestHash.js';
import { AddAmbiguousMessageStatus1764540000000 } from './1764540000000-AddAmbiguousMessageStatus.js';
import { AddOutcomeCheckedAt1796130380417 } from './1796130380417-AddOutcomeCheckedAt.js';
import { AddWhatsAppTemplateToNotificationTemplates1796130548207 } from './1796130548207-AddWhatsAppTemplateToNotificationTemplates.js';
import { AddMessageErrorDetails1796130561208603 } from './1796130561208603-AddMessageErrorDetails.js';
import { CreateCrmEvents1796130303779417 } from './1796130303779417-CreateCrmEvents.js';
import { AddContactLink1796131301193522 } from './1796131301193522-AddContactLink.js';

/** Entities of the messaging schema (explicit list: ESM has no globs). Repositories use plain SQL. */
export const MessagingEntities: (ObjectType<unknown> | EntitySchema<unknown>)[] = [];

/** Migrations of the messaging schema, oldest first (the bus tables come from the platform). */
export const MessagingMigrations: (new () => MigrationInterface)[] = [
  CreateMessagingTables1764500000000,
  CreateInboundReceipts1764510000000,
  AddNotificationRequestHash1764520000000,
  AddAmbiguousMessageStatus1764540000000,
  AddOutcomeCheckedAt1796130380417,
  AddWhatsAppTemplateToNotificationTemplates1796130548207,
  AddMessageErrorDetails1796130561208603,
  CreateCrmEvents1796130303779417,
  AddContactLink1796131301193522,
];
