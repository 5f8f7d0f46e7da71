import { Inject, Injectable } from '@nestjs/common';
import type { FlowTriggerKind } from '@touchpoint/contracts';
import { rowsOf, type Tx } from '@touchpoint/database';
import type { Logger } from '@touchpoint/observability';
import { LOGGER } from '@touchpoint/runtime';
import { RuleCache } from './rule-cache.js';

/** Trigger kinds that come from events (every kind but `manual`). */
export type EventTriggerKind = Exclude<FlowTriggerKind, 'manual'>;

/**
 * `recordTrigger` of seed 000 "Rules": in the transaction of the event, a small row — only when
 * the organization has an enabled rule for that kind. The event id makes it idempotent: an event
 * delivered twice records one trigger.
 *
 * Two modes. Where the trigger is the event's own work (contact and CRM events), a failed write
 * throws, so the event is retried and, if it keeps failing, dead-lettered where an admin can replay
 * it: never dropped. Where it is a side write of a stop path (an inbound reply, a resolution), the
 * stop must commit whatever else fails (DESIGN §5.3), so `optional` runs the write in a savepoint:
 * when PostgreSQL refuses it (a value it cannot store, a constraint, a missing table), only the
 * savepoint rolls back, the failure is logged (`followups.trigger_record_failed`, with the
 * SQLSTATE) and the caller's transaction goes on without the trigger.
 */
@Injectable()
export class TriggerRecorder {
  constructor(
    private readonly rules: RuleCache,
    @Inject(LOGGER) private readonly logger: Logger,
  ) {}

  /**
   * @param options.optional a stop path's side write: a refused row is logged and skipped instead
   *   of failing the caller's transaction
   * @returns whether a trigger row was written (false also when an optional write failed and was logged)
   * @throws the database error of a refused row unless `optional`
   */
  async record(tx: Tx, t: { organizationId: string; kind: EventTriggerKind; eventId: string; contactId: string; data?: Record<string, unknown>; at: Date }, options: { optional?: boolean } = {}): Promise<boolean> {
    // Before any savepoint: a read of our own flows (mostly from the cache), so the common case
    // (no rule listens) costs no savepoint round trips.
    if (!(await this.rules.has(tx, t.organizationId, t.kind))) return false;
    if (!options.optional) return this.insert(tx, t);
    try {
      return await tx.savepoint(() => this.insert(tx, t));
    } catch (err) {
      // When the connection itself broke, the rollback to the savepoint fails too: the transaction
      // is lost and its next statement (or COMMIT) fails with that error, which reaches the caller.
      const e = err as Error & { code?: string };
      this.logger.error(
        { event: 'followups.trigger_record_failed', organization_id: t.organizationId, kind: t.kind, event_id: t.eventId, contact_id: t.contactId, code: e.code ?? null, err: { type: e.name, message: e.message } },
        'trigger not recorded; the event was applied without it',
      );
      return false;
    }
  }

  private async insert(tx: Tx, t: { organizationId: string; kind: EventTriggerKind; eventId: string; contactId: string; data?: Record<string, unknown>; at: Date }): Promise<boolean> {
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
