import { Injectable } from '@nestjs/common';
import type { FlowStatus, FlowTemplateRef } from '@touchpoint/contracts';
import { truncateText } from '@touchpoint/text';
import type { ContactActivity } from '../contacts/contacts.repository.js';
import type { EnrollmentRow, NewEnrollmentEvent } from '../enrollments/enrollment-row.js';
import { type Queryable, rowFromJson, rowsOf, genericPlan } from '@touchpoint/database';

/** An effect a step records (written with the step by `writeStep`). */
export interface NewEffect {
  id: string;
  organizationId: string;
  enrollmentId: string;
  contactId: string;
  nodeId: string;
  step: number;
  kind: 'send' | 'action' | 'classification';
  status: string;
  /** Model usage of an AI-written or AI-classified step. */
  usage?: Record<string, unknown> | null;
  idempotencyKey?: string | null;
  text?: string | null;
  template?: FlowTemplateRef | null;
  senderId?: string | null;
  reason?: string | null;
}

/** A send effect found at its step (the approval path). */
export interface StepSendEffect {
  id: string;
  status: string;
  decided_by_api_key_id: string | null;
  decided_by_member_id: string | null;
}

/** Enrollment columns a step changes, with their SQL types (for the unnest arrays of `writeSteps`). */
const STATE_COLUMNS = [
  ['status', 'text'],
  ['reason', 'text'],
  ['node_id', 'text'],
  ['step', 'int'],
  ['next_run_at', 'timestamptz'],
  ['node_entered_at', 'timestamptz'],
  ['variables', 'jsonb'],
  ['sender_id', 'uuid'],
  ['repeat_counts', 'jsonb'],
  ['last_reply_text', 'text'],
  ['reply_seen_at', 'timestamptz'],
  ['handoff_seen_at', 'timestamptz'],
  ['pending_exit', 'text'],
  ['last_send_status', 'text'],
  ['inflight_effect_id', 'uuid'],
  ['sender_unavailable_since', 'timestamptz'],
  ['failures', 'int'],
  ['last_error', 'text'],
  ['finished_at', 'timestamptz'],
  ['ai_attempts', 'int'],
  ['locked_until', 'timestamptz'],
  ['ai_draft', 'jsonb'],
] as const satisfies readonly (readonly [keyof EnrollmentRow, string])[];

/** What one step writes: the enrollment's new state, its timeline entries, and its effects. */
export interface StepWrite {
  state: EnrollmentRow;
  events: NewEnrollmentEvent[];
  effects: NewEffect[];
}

/** The timestamp columns of the contact row `to_jsonb` gives (`rowFromJson`). */
const CONTACT_TIMESTAMPS = ['last_inbound_at', 'opted_out_at', 'handoff_at', 'erased_at'] as const;

/** A claimed enrollment: its row, its flow's status, its contact (null when busy or missing) and its recent sends. */
export type ClaimedRow = EnrollmentRow & { flow_status: FlowStatus; contact: ContactActivity | null; recentSends: { count: number; oldest: Date | null } };

/** Statuses the release loop picks up when due. */
/** Statuses whose `next_run_at` the claim honours. */
export const DUE_STATUS_LIST = ['active', 'waiting_reply'] as const;
const DUE_STATUSES = `(${DUE_STATUS_LIST.map((s) => `'${s}'`).join(', ')})`;

/** Every statement of the release loop that is not plain enrollment state. */
@Injectable()
export class ReleaseRepository {
  /**
   * Claims the oldest due enrollment and takes its contact, in one statement (seed 000 "claim …
   * FOR UPDATE SKIP LOCKED", "contact … SKIP LOCKED"). Rows another release holds are skipped,
   * never waited for, so any number of workers and replicas can run. The contact comes FOR NO KEY
   * UPDATE SKIP LOCKED, where seed 000 says FOR SHARE: with a shared lock two releases of one
   * contact ran together, each counted only its own sends against the per-contact 24 h cap (40
   * flows due at once for one contact sent 9 where the cap is 3), and two tag steps of one contact
   * each waited for the other's share lock to update the row (deadlock). Held exclusively, a
   * second release of the contact finds it busy and comes back in 2 s. A stop path updating the
   * contact still makes it come back null, and the release gives up at once — never waiting on each
   * other, the two cannot deadlock. The flow's status comes along, unlocked (see lockFlowStatus).
   * @returns the claimed row with `contact` null when the contact is busy (or missing), or undefined when nothing is due
   */
  async claimDue(
    db: Queryable,
    now: Date,
    /** The second pass of an AI step: this enrollment, only while its fence holds (waits for its lock). */
    fenced?: { id: string; aiAttempts: number; nodeId: string; step: number },
  ): Promise<ClaimedRow | undefined> {
    const claim = fenced
      ? `SELECT id FROM enrollments WHERE id = $2 AND ai_attempts = $3 AND node_id = $4 AND step = $5 AND status IN ${DUE_STATUSES} AND $1::timestamptz IS NOT NULL FOR UPDATE`
      : `SELECT id FROM enrollments WHERE status IN ${DUE_STATUSES} AND next_run_at <= $1 ORDER BY next_run_at LIMIT 1 FOR UPDATE SKIP LOCKED`;
    const [row] = await this.claim(db, now, claim, fenced ? [fenced.id, fenced.aiAttempts, fenced.nodeId, fenced.step] : []);
    return row;
  }

  /**
   * Claims up to `limit` of the oldest due enrollments in one statement, each as `claimDue` claims
   * one (SKIP LOCKED on the enrollment and on its contact), oldest first. Several rows of one
   * contact in the batch share its lock (the same transaction holds it).
   * @returns the claimed rows (empty when nothing is due)
   */
  async claimDueBatch(db: Queryable, now: Date, limit: number): Promise<ClaimedRow[]> {
    return this.claim(db, now, `SELECT id FROM enrollments WHERE status IN ${DUE_STATUSES} AND next_run_at <= $1 ORDER BY next_run_at LIMIT $2 FOR UPDATE SKIP LOCKED`, [limit]);
  }

  /** Runs a claim (`$1` now, then `extra` from `$2`) and reads each claimed row with its flow status, contact and recent sends. */
  private async claim(db: Queryable, now: Date, claim: string, extra: unknown[]): Promise<ClaimedRow[]> {
    const rows = await rowsOf<EnrollmentRow & { flow_status: FlowStatus; contact: Record<string, unknown> | null }>(
      db,
      `WITH claimed AS (${claim})
       SELECT e.*, f.status AS flow_status, to_jsonb(c) AS contact
         FROM claimed
         JOIN enrollments e ON e.id = claimed.id
         JOIN flows f ON f.id = e.flow_id
         LEFT JOIN LATERAL (
           SELECT * FROM contacts WHERE organization_id = e.organization_id AND contact_id = e.contact_id
           FOR NO KEY UPDATE SKIP LOCKED) c ON true
        ORDER BY e.next_run_at, e.id`,
      [now, ...extra],
    );
    // The contacts' follow-up sends of the last 24 h (per-contact cap), read by a statement of its
    // own: its snapshot is taken after the contact locks, so it sees the sends of a release of the
    // same contact that committed while the claim waited (the claim's own snapshot predates them).
    const locked = [...new Set(rows.filter((r) => r.contact).map((r) => r.contact_id))];
    const recent = locked.length
      ? await rowsOf<{ contact_id: string; count: number; oldest: Date | null }>(
          db,
          `SELECT contact_id, count(*)::int AS count, min(created_at) AS oldest FROM effects
            WHERE contact_id = ANY($1::uuid[]) AND kind = 'send' AND status IN ('queued', 'sent', 'uncertain') AND created_at > $2
            GROUP BY contact_id`,
          [locked, new Date(now.getTime() - 24 * 3_600_000)],
        )
      : [];
    const byContact = new Map(recent.map((r) => [r.contact_id, r]));
    return rows.map((row) => ({
      ...row,
      contact: rowFromJson<ContactActivity>(row.contact, CONTACT_TIMESTAMPS),
      recentSends: { count: byContact.get(row.contact_id)?.count ?? 0, oldest: byContact.get(row.contact_id)?.oldest ?? null },
    }));
  }

  /**
   * Writes what one or more steps did, in one statement: each enrollment's new state (its row lock
   * is held), their timeline entries, and their effects. An effect already recorded for the same
   * (enrollment, node, visit, kind) inserts nothing.
   * @returns how many effects were inserted, per enrollment id (absent: none)
   */
  async writeSteps(db: Queryable, steps: StepWrite[], now: Date): Promise<Map<string, number>> {
    const params: unknown[] = [now];
    const arg = (values: unknown[], type: string) => `$${params.push(values)}::${type}[]`;
    const stateArgs = [
      arg(
        steps.map((w) => w.state.id),
        'uuid',
      ),
      ...STATE_COLUMNS.map(([column, type]) =>
        arg(
          steps.map((w) => (type === 'jsonb' && w.state[column] !== null ? JSON.stringify(w.state[column]) : w.state[column])),
          type,
        ),
      ),
    ];
    const events = steps.flatMap((w) => w.events);
    const ev = (f: (e: NewEnrollmentEvent) => unknown, type: string) => arg(events.map(f), type);
    const eventArgs = [ev((e) => e.organization_id, 'uuid'), ev((e) => e.enrollment_id, 'uuid'), ev((e) => e.type, 'text'), ev((e) => e.node_id, 'text'), ev((e) => JSON.stringify(e.data), 'jsonb'), ev((e) => e.at, 'timestamptz')];
    const effects = steps.flatMap((w) => w.effects);
    const ef = (f: (e: NewEffect) => unknown, type: string) => arg(effects.map(f), type);
    const effectArgs = [
      ef((e) => e.id, 'uuid'),
      ef((e) => e.organizationId, 'uuid'),
      ef((e) => e.enrollmentId, 'uuid'),
      ef((e) => e.contactId, 'uuid'),
      ef((e) => e.nodeId, 'text'),
      ef((e) => e.step, 'int'),
      ef((e) => e.kind, 'text'),
      ef((e) => e.status, 'text'),
      ef((e) => e.idempotencyKey ?? null, 'text'),
      ef((e) => e.text ?? null, 'text'),
      ef((e) => (e.template ? JSON.stringify(e.template) : null), 'jsonb'),
      ef((e) => e.senderId ?? null, 'uuid'),
      ef((e) => (e.usage ? JSON.stringify(e.usage) : null), 'jsonb'),
      ef((e) => e.reason ?? null, 'text'),
    ];
    const columns = STATE_COLUMNS.map(([column]) => column);
    const rows = await rowsOf<{ enrollment_id: string; n: number }>(
      db,
      genericPlan(`WITH v AS (
         SELECT * FROM unnest(${stateArgs.join(', ')}) AS v(id, ${columns.join(', ')})),
       saved AS (
         UPDATE enrollments e SET ${columns.map((c) => `${c} = v.${c}`).join(', ')}, revision = e.revision + 1, updated_at = $1
           FROM v WHERE e.id = v.id RETURNING e.id),
       timeline AS (
         INSERT INTO enrollment_events (organization_id, enrollment_id, type, node_id, data, created_at)
         SELECT * FROM unnest(${eventArgs.join(', ')})),
       inserted AS (
         INSERT INTO effects (id, organization_id, enrollment_id, contact_id, node_id, step, kind, status, idempotency_key, text, template, sender_id, usage, reason, created_at, updated_at)
         SELECT id, org, enr, contact, node, step, kind, status, ikey, txt, tpl, sender, usage, reason, $1, $1
           FROM unnest(${effectArgs.join(', ')}) AS x(id, org, enr, contact, node, step, kind, status, ikey, txt, tpl, sender, usage, reason)
         ON CONFLICT (enrollment_id, node_id, step, kind) DO NOTHING
         RETURNING enrollment_id)
       SELECT enrollment_id, count(*)::int AS n FROM inserted GROUP BY enrollment_id`),
      params,
    );
    return new Map(rows.map((r) => [r.enrollment_id, r.n]));
  }

  /**
   * The send effect this visit of a node already has (an approval asked for in an earlier release),
   * locked so a decision arriving now waits for this release.
   */
  async stepSendEffect(db: Queryable, enrollmentId: string, nodeId: string, step: number): Promise<StepSendEffect | undefined> {
    const [row] = await rowsOf<StepSendEffect>(
      db,
      `SELECT id, status, decided_by_api_key_id, decided_by_member_id FROM effects
        WHERE enrollment_id = $1 AND node_id = $2 AND step = $3 AND kind = 'send' FOR UPDATE`,
      [enrollmentId, nodeId, step],
    );
    return row;
  }

  /** An approved send goes out: the effect takes the send's key, content and sender. */
  async queueApprovedEffect(db: Queryable, id: string, values: { idempotencyKey: string; text: string | null; template: FlowTemplateRef | null; senderId: string; now: Date }): Promise<void> {
    await rowsOf(db, `UPDATE effects SET status = 'queued', idempotency_key = $2, text = $3, template = $4::jsonb, sender_id = $5, updated_at = $6 WHERE id = $1`, [
      id,
      values.idempotencyKey,
      values.text,
      values.template ? JSON.stringify(values.template) : null,
      values.senderId,
      values.now,
    ]);
  }

  /** An approval that lost its effect before the send (seed 002 "Efeitos": `approval_revoked`). */
  async rejectEffect(db: Queryable, id: string, reason: string, now: Date): Promise<void> {
    await rowsOf(db, `UPDATE effects SET status = 'rejected', reason = $2, updated_at = $3 WHERE id = $1`, [id, reason, now]);
  }

  /**
   * The flow's status under a share lock, for a release about to park or stop an enrollment
   * because of it: a status change holds the flow row, so the two are ordered and a flow
   * re-activated meanwhile cannot miss the enrollment it parks. SKIP LOCKED: never wait.
   * @returns the status, or undefined when the flow row is being changed right now
   */
  async lockFlowStatus(db: Queryable, flowId: string): Promise<FlowStatus | undefined> {
    const [row] = await rowsOf<{ status: FlowStatus }>(db, `SELECT status FROM flows WHERE id = $1 FOR SHARE SKIP LOCKED`, [flowId]);
    return row?.status;
  }

  /** Pushes a claimed enrollment's due time (busy contact, pacing): nothing else changes. */
  async deferOnly(db: Queryable, id: string, at: Date): Promise<void> {
    await rowsOf(db, `UPDATE enrollments SET next_run_at = $2 WHERE id = $1`, [id, at]);
  }

  /**
   * Records an unexpected failure of a release that rolled back (seed 000 "Failure behaviour"): the
   * enrollment backs off, and becomes `dead` after `maxFailures`. Only if it is still at the step
   * that failed (its revision), so a concurrent stop is never overwritten.
   * @returns the failures count and status after the update, or undefined when the row moved on
   */
  async recordFailure(db: Queryable, id: string, revision: number, error: string, backoffMs: (failures: number) => number, maxFailures: number, now: Date): Promise<{ failures: number; status: string } | undefined> {
    const [row] = await rowsOf<{ failures: number; revision: number }>(db, `SELECT failures, revision FROM enrollments WHERE id = $1 AND revision = $2 AND status IN ${DUE_STATUSES} FOR UPDATE`, [id, revision]);
    if (!row) return undefined;
    const failures = row.failures + 1;
    const dead = failures >= maxFailures;
    const [saved] = await rowsOf<{ failures: number; status: string }>(
      db,
      `UPDATE enrollments SET failures = $2, last_error = $3, status = CASE WHEN $4 THEN 'dead' ELSE status END,
              reason = CASE WHEN $4 THEN 'too_many_failures' ELSE reason END,
              finished_at = CASE WHEN $4 THEN $5::timestamptz ELSE finished_at END,
              next_run_at = CASE WHEN $4 THEN NULL ELSE $6::timestamptz END,
              revision = revision + 1, updated_at = $5
        WHERE id = $1 RETURNING failures, status`,
      [id, failures, truncateText(error, 1000), dead, now, new Date(now.getTime() + backoffMs(failures))],
    );
    return saved;
  }

  /** The latest schedule plan of a step (a deferral to the window, cap or quota), kept up to date. */
  async upsertSchedulePlan(db: Queryable, p: { id: string; organizationId: string; enrollmentId: string; contactId: string; nodeId: string; step: number; reason: string; at: Date; now: Date }): Promise<void> {
    await rowsOf(
      db,
      `INSERT INTO effects (id, organization_id, enrollment_id, contact_id, node_id, step, kind, status, reason, usage, created_at, updated_at)
       VALUES ($1, $2, $3, $4, $5, $6, 'schedule_plan', 'done', $7, jsonb_build_object('planned_at', $8::text), $9, $9)
       ON CONFLICT (enrollment_id, node_id, step, kind) DO UPDATE SET reason = EXCLUDED.reason, usage = EXCLUDED.usage, updated_at = EXCLUDED.updated_at`,
      [p.id, p.organizationId, p.enrollmentId, p.contactId, p.nodeId, p.step, p.reason, p.at.toISOString(), p.now],
    );
  }

  /** The reason of a step's current schedule plan (undefined: it has none). */
  async schedulePlanReason(db: Queryable, enrollmentId: string, nodeId: string, step: number): Promise<string | undefined> {
    const [row] = await rowsOf<{ reason: string | null }>(db, `SELECT reason FROM effects WHERE enrollment_id = $1 AND node_id = $2 AND step = $3 AND kind = 'schedule_plan'`, [enrollmentId, nodeId, step]);
    return row?.reason ?? undefined;
  }

  /**
   * Counts one send against the monthly quota if there is room: a conditional UPDATE that counts
   * and refuses in one statement (DESIGN §6). The month's row is created on its first use from
   * the sends already made that month, so a quota set mid-month counts what went out before it.
   * @param month first day of the month, `YYYY-MM-01` (UTC)
   * @returns whether the send fits
   */
  async takeMonthlySend(db: Queryable, organizationId: string, month: string, quota: number): Promise<boolean> {
    const take = () => rowsOf(db, `UPDATE monthly_usage SET sends = sends + 1 WHERE organization_id = $1 AND month = $2::date AND sends < $3 RETURNING sends`, [organizationId, month, quota]);
    if ((await take()).length) return true;
    if ((await rowsOf(db, `SELECT 1 FROM monthly_usage WHERE organization_id = $1 AND month = $2::date`, [organizationId, month])).length) return false;
    await rowsOf(
      db,
      `INSERT INTO monthly_usage (organization_id, month, sends)
       SELECT $1, $2::date, count(*) FROM effects
        WHERE organization_id = $1 AND kind = 'send' AND status IN ('queued', 'sent', 'uncertain') AND created_at >= ($2::date)::timestamp AT TIME ZONE 'UTC'
       ON CONFLICT DO NOTHING`,
      [organizationId, month],
    );
    return (await take()).length > 0;
  }
}
