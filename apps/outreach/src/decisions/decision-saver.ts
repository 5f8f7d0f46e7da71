import { Injectable } from '@nestjs/common';
import type { DecisionReason, OutreachEnrollmentEndReason } from '@touchpoint/contracts';
import type { Tx } from '@touchpoint/database';
import { EnrollmentsRepository, type EnrollmentRow } from '../enrollments/enrollments.repository.js';
import { addMs, DAY_MS, RETRY_DECISION_AFTER_MS } from './next-check.js';
import { type DecisionRow, DecisionsRepository } from './decisions.repository.js';
import type { CheckedAction } from './post-check.js';

/** Invalid decisions in a row that end an enrollment `stalled` (seed 003 §4.3). */
export const STALLED_AFTER_INVALID = 3;

/** What the decide step produced, after the post-check. */
export type DecisionResult = { kind: 'action'; action: CheckedAction } | { kind: 'invalid'; reason: string } | { kind: 'error'; reason: string };

export interface SaveInput {
  organization_id: string;
  enrollment_id: string;
  trigger_event_id: string;
  trigger_reason: DecisionReason;
  trigger_ref: string | null;
  /** The context_version the decision was made on. */
  version: number;
  result: DecisionResult;
  /** The newest message of the email threads (an email decision replies to it). */
  reply_to: { message_id: string; text: string | null; conversation_id: string | null; external_id: string | null; subject: string | null } | null;
  run_id: string | null;
  raw_output: unknown;
  now: Date;
}

export interface SaveOutcome {
  decision: DecisionRow;
  /** `applied`: the effect is on the enrollment; `discarded`: a newer change got there first. */
  effect: 'applied' | 'discarded';
}

const OUTBOUND = new Set(['email', 'linkedin_connection', 'linkedin_message']);

/**
 * The save of a decision (seed 003 §4.3, The save): insert the decision first, then one
 * compare-and-set write on the enrollment where `context_version = v`, which moves it to v+1 and
 * applies the effect (wait → next check in its days; stop → ended; an outbound action → no next
 * check while the draft waits; invalid or error → next check in one day, and the third invalid in
 * a row ends it `stalled`). 0 rows means a reply (or another change) came first and the decision
 * is discarded, unless the row already holds this decision's own effect: a retried save.
 */
@Injectable()
export class DecisionSaver {
  constructor(
    private readonly decisions: DecisionsRepository,
    private readonly enrollments: EnrollmentsRepository,
  ) {}

  async save(tx: Tx, input: SaveInput): Promise<SaveOutcome> {
    const { result, now } = input;
    const action = result.kind === 'action' ? result.action : null;
    const { row, inserted } = await this.decisions.insert(tx, {
      organization_id: input.organization_id,
      enrollment_id: input.enrollment_id,
      trigger_event_id: input.trigger_event_id,
      trigger_reason: input.trigger_reason,
      trigger_ref: input.trigger_ref,
      context_version: input.version,
      outcome: result.kind === 'action' ? 'saved' : result.kind,
      type: action?.type ?? null,
      rationale: action?.rationale ?? null,
      objective: action?.objective ?? null,
      goal_met: action?.goal_met ?? false,
      followup_days: action?.followup_days ?? null,
      failure_reason: result.kind === 'action' ? null : result.reason,
      reply_to_message_id: action?.type === 'email' ? (input.reply_to?.message_id ?? null) : null,
      reply_to_text: action?.type === 'email' ? (input.reply_to?.text ?? null) : null,
      reply_to: action?.type === 'email' && input.reply_to ? { message_id: input.reply_to.message_id, conversation_id: input.reply_to.conversation_id, external_id: input.reply_to.external_id, subject: input.reply_to.subject } : null,
      run_id: input.run_id,
      raw_output: input.raw_output,
      now,
    });
    if (!inserted && row.outcome === 'discarded') return { decision: row, effect: 'discarded' };

    const written = await this.applyEffect(tx, row, input.version, now);
    if (written) return { decision: row, effect: 'applied' };
    // 0 rows: the first attempt of this save applied the effect, or a reply moved the version first.
    const current = await this.enrollments.findById(tx, row.enrollment_id);
    if (current && holdsEffect(current, row)) return { decision: row, effect: 'applied' };
    await this.decisions.setOutcome(tx, row.id, 'discarded', null, now);
    return { decision: { ...row, outcome: 'discarded' }, effect: 'discarded' };
  }

  /**
   * After the decision save, a draft that could not be written: the model run failed (`error`,
   * never counts toward stalled) or the draft check refused it (`invalid`, counts). The enrollment
   * write is conditional on v+1; 0 rows means a reply got there first and the decision is discarded.
   */
  async draftFailed(tx: Tx, decision: DecisionRow, outcome: 'error' | 'invalid', reason: string, now: Date): Promise<'applied' | 'discarded'> {
    await this.decisions.setOutcome(tx, decision.id, outcome, reason, now);
    const written = await this.applyEffect(tx, { ...decision, outcome, type: decision.type }, decision.context_version + 1, now, false);
    if (written) return 'applied';
    await this.decisions.setOutcome(tx, decision.id, 'discarded', null, now);
    return 'discarded';
  }

  /** The conditional enrollment write of a decision's outcome. Null when 0 rows matched. */
  private async applyEffect(tx: Tx, d: DecisionRow, expected: number, now: Date, bump = true): Promise<EnrollmentRow | null> {
    const cas = (set: Parameters<EnrollmentsRepository['compareAndSet']>[3]) => this.enrollments.compareAndSet(tx, d.enrollment_id, expected, set, now, { bump, onlyStatus: ['active'] });
    if (d.outcome === 'error') return cas({ next_check_at: addMs(now, RETRY_DECISION_AFTER_MS) });
    if (d.outcome === 'invalid') {
      const recent = await this.decisions.recentCounted(tx, d.enrollment_id, STALLED_AFTER_INVALID);
      if (recent.length === STALLED_AFTER_INVALID && recent.every((o) => o === 'invalid')) return cas(ended('stalled', now));
      return cas({ next_check_at: addMs(now, RETRY_DECISION_AFTER_MS) });
    }
    if (d.type === 'stop') return cas(ended(d.goal_met ? 'goal_met' : 'stop_decision', now));
    if (d.type === 'wait') return cas({ next_check_at: addMs(now, (d.followup_days ?? 1) * DAY_MS) });
    return cas({ next_check_at: null });
  }
}

function ended(reason: OutreachEnrollmentEndReason, now: Date) {
  return { status: 'ended' as const, ended_reason: reason, ended_at: now, next_check_at: null };
}

/**
 * Whether the enrollment already holds a decision's effect (seed 003 §4.3, the retry of a save):
 * a stop ended the row with its own reason; an outbound action left an active row with no next
 * check; a wait set the next check its days after the save (and an invalid or error decision one
 * day after), far past the event lease a reply would have written.
 */
export function holdsEffect(e: Pick<EnrollmentRow, 'status' | 'ended_reason' | 'next_check_at'>, d: Pick<DecisionRow, 'outcome' | 'type' | 'goal_met' | 'followup_days' | 'created_at'>): boolean {
  if (d.outcome === 'discarded') return false;
  if (d.outcome === 'saved' && d.type === 'stop') return e.status === 'ended' && e.ended_reason === (d.goal_met ? 'goal_met' : 'stop_decision');
  if (e.status === 'ended') return d.outcome === 'invalid' && e.ended_reason === 'stalled';
  if (e.status !== 'active') return false;
  if (d.outcome === 'saved' && d.type && OUTBOUND.has(d.type)) return e.next_check_at === null;
  const gap = d.outcome === 'saved' ? (d.followup_days ?? 1) * DAY_MS : RETRY_DECISION_AFTER_MS;
  return e.next_check_at !== null && new Date(e.next_check_at).getTime() >= new Date(d.created_at).getTime() + gap;
}
