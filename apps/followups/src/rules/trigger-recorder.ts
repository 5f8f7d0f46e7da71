import { Injectable } from '@nestjs/common';
import type { FlowTriggerKind } from '@touchpoint/contracts';
import type { Tx } from '@touchpoint/database';
import { rowsOf } from '../requests/queryable.js';
import { RuleCache } from './rule-cache.js';

/** Trigger kinds that come from events (every kind but `manual`). */
export type EventTriggerKind = Exclude<FlowTriggerKind, 'manual'>;

/**
 * `recordTrigger` of seed 000 "Rules": in the transaction of the event, a small row — only when
 * the organization has an enabled rule for that kind. The event id makes it idempotent: an event
 * delivered twice records one trigger.
 */
@Injectable()
export class TriggerRecorder {
  constructor(private readonly rules: RuleCache) {}

  /** @returns whether a trigger row was written */
  async record(tx: Tx, t: { organizationId: string; kind: EventTriggerKind; eventId: string; contactId: string; data?: Record<string, unknown>; at: Date }): Promise<boolean> {
    if (!(await this.rules.has(tx, t.organizationId, t.kind))) return false;
    const inserted = await rowsOf(
      tx,
      `INSERT INTO triggers (organization_id, type, event_id, contact_id, data, next_attempt_at, created_at)
       VALUES ($1, $2, $3, $4, $5::jsonb, $6, $6)
       ON CONFLICT (organization_id, event_id, type) DO NOTHING RETURNING id`,
      [t.organizationId, t.kind, t.eventId, t.contactId, JSON.stringify(t.data ?? {}), t.at],
    );
    return inserted.length === 1;
  }
}
