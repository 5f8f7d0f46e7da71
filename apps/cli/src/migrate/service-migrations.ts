import type { MigrationInterface } from 'typeorm';
import type { ServiceName } from '@touchpoint/contracts';
import { AbuseMigrations } from '../../../abuse/src/migrations/index.js';
import { AiGatewayMigrations } from '../../../ai-gateway/src/migrations/index.js';
import { FollowupsMigrations } from '../../../followups/src/migrations/index.js';
import { GatewayMigrations } from '../../../gateway/src/migrations/index.js';
import { MessagingMigrations } from '../../../messaging/src/migrations/index.js';
import { OutboxDispatcherMigrations } from '../../../outbox-dispatcher/src/migrations/index.js';
import { OutreachMigrations } from '../../../outreach/src/migrations/index.js';

/**
 * Each service's own migrations, as its app lists them (the bus tables come first for every
 * schema, added by the migrator). A Record over ServiceName, so a new service cannot be forgotten.
 */
export const SERVICE_MIGRATIONS: Record<ServiceName, (new () => MigrationInterface)[]> = {
  gateway: GatewayMigrations,
  followups: FollowupsMigrations,
  outreach: OutreachMigrations,
  messaging: MessagingMigrations,
  'outbox-dispatcher': OutboxDispatcherMigrations,
  abuse: AbuseMigrations,
  'ai-gateway': AiGatewayMigrations,
};
