import { Injectable } from '@nestjs/common';
import type { FlowSettings } from '@touchpoint/contracts';
import { type Queryable, rowsOf } from '@touchpoint/database';

/** A recorded trigger as the trigger loop claims it. */
export interface TriggerRow {
  id: string;
  organization_id: string;
  type: string;
  event_id: string;
  contact_id: string;
  data: Record<string, unknown>;
  attempts: number;
}

/** Every SQL statement of the trigger loop over recorded triggers (seed 000 "Rules"). */
@Injectable()
export class TriggersRepository {
  /**
   * Claims up to `limit` triggers due at `now`, oldest due first. SKIP LOCKED: loops of other
   * replicas take other rows; the claim holds until the transaction ends.
   */
  claimDue(db: Queryable, now: Date, limit: number): Promise<TriggerRow[]> {
    return rowsOf<TriggerRow>(
      db,
      `SELECT id, organization_id, type, event_id, contact_id, data, attempts FROM triggers
        WHERE processed_at IS NULL AND next_attempt_at <= $1
        ORDER BY next_attempt_at, id LIMIT $2
        FOR UPDATE SKIP LOCKED`,
      [now, limit],
    );
  }

  /** The organization's active flows whose published version is triggered by `kind`, oldest first: the rules a trigger is matched against. */
  activeRules(db: Queryable, organizationId: string, kind: string): Promise<{ id: string; settings: FlowSettings }[]> {
    return rowsOf<{ id: string; settings: FlowSettings }>(
      db,
      `SELECT f.id, v.settings FROM flows f JOIN flow_versions v ON v.id = f.published_version_id
        WHERE f.organization_id = $1 AND f.status = 'active' AND v.settings -> 'trigger' ->> 'kind' = $2
        ORDER BY f.created_at, f.id`,
      [organizationId, kind],
    );
  }

  /** Marks a trigger processed at `now` with what it did. */
  async markProcessed(db: Queryable, id: string, now: Date, outcome: object): Promise<void> {
    await rowsOf(db, `UPDATE triggers SET processed_at = $2, outcome = $3::jsonb, attempts = attempts + 1 WHERE id = $1`, [id, now, JSON.stringify(outcome)]);
  }

  /** Records a failed attempt: retried at `nextAttemptAt`, or, when `giveUp`, processed at `now` as given up. */
  async recordFailure(db: Queryable, f: { id: string; attempts: number; error: string; nextAttemptAt: Date; giveUp: boolean; now: Date }): Promise<void> {
    await rowsOf(
      db,
      `UPDATE triggers SET attempts = $2, last_error = $3, next_attempt_at = $4, processed_at = CASE WHEN $5 THEN $6::timestamptz ELSE NULL END,
              outcome = CASE WHEN $5 THEN '{"given_up": true}'::jsonb ELSE outcome END
        WHERE id = $1`,
      [f.id, f.attempts, f.error, f.nextAttemptAt, f.giveUp, f.now],
    );
  }

  /** Whether the contact matches a compiled segment (`where` and `params` from `compileSegment`, `$1` the organization, `$2` the contact). */
  async contactMatches(db: Queryable, where: string, params: unknown[]): Promise<boolean> {
    return (await rowsOf(db, `SELECT 1 FROM contacts c WHERE c.organization_id = $1 AND c.contact_id = $2 AND (${where})`, params)).length === 1;
  }
}
