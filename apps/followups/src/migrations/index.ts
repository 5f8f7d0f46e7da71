import type { EntitySchema, MigrationInterface, ObjectType } from 'typeorm';
import { CreateFollowupTables1764700000000 } from './1764700000000-CreateFollowupTables.js';
import { AddEffectApprovals1764800000000 } from './1764800000000-AddEffectApprovals.js';
import { CreatePromises1764810000000 } from './1764810000000-CreatePromises.js';
import { AddAiStepLease1764820000000 } from './1764820000000-AddAiStepLease.js';
import { CreateTriggers1764830000000 } from './1764830000000-CreateTriggers.js';
import { CreateBulkJobs1764840000000 } from './1764840000000-CreateBulkJobs.js';
import { AddAiDraft1764850000000 } from './1764850000000-AddAiDraft.js';
import { AddContactTagsAt1764860000000 } from './1764860000000-AddContactTagsAt.js';
import { AddQueuedSendsIndex1764870000000 } from './1764870000000-AddQueuedSendsIndex.js';
import { AddInFlightWindow1796130508922 } from './1796130508922-AddInFlightWindow.js';
import { AddReleaseGates1796130358289417 } from './1796130358289417-AddReleaseGates.js';
import { CreateAgentsRegistry1796131069596562 } from './1796131069596562-CreateAgentsRegistry.js';

/** Entities of the followups schema (explicit list: ESM has no globs). Repositories use named SQL. */
export const FollowupsEntities: (ObjectType<unknown> | EntitySchema<unknown>)[] = [];

/** Migrations of the followups schema, oldest first (the bus tables come from the platform). */
export const FollowupsMigrations: (new () => MigrationInterface)[] = [
  CreateFollowupTables1764700000000,
  AddEffectApprovals1764800000000,
  CreatePromises1764810000000,
  AddAiStepLease1764820000000,
  CreateTriggers1764830000000,
  CreateBulkJobs1764840000000,
  AddAiDraft1764850000000,
  AddContactTagsAt1764860000000,
  AddQueuedSendsIndex1764870000000,
  AddInFlightWindow1796130508922,
  AddReleaseGates1796130358289417,
  CreateAgentsRegistry1796131069596562,
];
