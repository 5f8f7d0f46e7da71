import { Inject, Injectable } from '@nestjs/common';
import { Counter } from 'prom-client';
import { MessagingCommands, type MessagingSendData } from '@touchpoint/contracts';
import type { Tx } from '@touchpoint/database';
import { type Logger, METRIC_PREFIX, Metrics } from '@touchpoint/observability';
import { LOGGER, UnitOfWork } from '@touchpoint/runtime';
import { Clock } from '@touchpoint/time';
import { DecisionsRepository } from '../decisions/decisions.repository.js';
import { PeopleDirectory } from '../directory/people.directory.js';
import { EnrollmentsRepository } from '../enrollments/enrollments.repository.js';
import type { RunContext, RunHandler } from '../runners/run-context.js';
import type { RunRow } from '../runners/runs.repository.js';
import { ActionsRepository } from '../review/actions.repository.js';
import { approvedHash } from '../review/canonical-json.js';
import { recipientOf, sameRecipient } from '../review/recipient.js';
import { type ActionContextRow, ReviewRepository } from '../review/review.repository.js';

/** Who asks messaging to send; the outcome events carry it back (MessageOutcomeData.requester). */
export const OUTREACH_REQUESTER = 'outreach';

/**
 * The address an approved action goes to, from its frozen `approved_payload.to` (seed 003 §4.5: to
 * is frozen, execution sends to it): the email address, or the LinkedIn member's provider id (the
 * profile URL when the approval froze none).
 */
export function approvedAddress(to: unknown): string {
  if (typeof to === 'string') return to;
  const member = to as { provider_id?: string | null; url?: string | null } | null;
  const address = member?.provider_id || member?.url;
  if (!address) throw new Error('the approved payload has no recipient');
  return address;
}

/** The messaging idempotency key of a send attempt: `outreach:{action_id}`, then `…:{n}` after a hold. */
export function sendKeyOf(actionId: string, attempt: number): string {
  return attempt <= 1 ? `outreach:${actionId}` : `outreach:${actionId}:${attempt}`;
}

type Recheck = { verdict: 'send' } | { verdict: 'hold'; why: string } | { verdict: 'refuse'; why: string } | { verdict: 'gone'; why: string };

/**
 * The execution runner (seed 003 §4.6; no model, no concurrency key): one run per
 * `outreach.action.approved`.
 * 1 recheck on fresh reads — the action approved and its hash matching its payload; enrollment
 *   and campaign active, outreach not stopped; the frozen `to` still the person's current address
 *   or LinkedIn id; not suppressed; the LinkedIn account connected (a message also needs the
 *   person connected); touch_count below max_touches. A paused campaign or a stopped organization
 *   holds the action (stays approved, next_attempt_at = now); any other refusal invalidates it
 *   and wakes the enrollment (v+1, next_check_at = now).
 * 2 the claim `approved → sending` is the send key, and the `messaging.send` command goes out in
 *   the same transaction, so a claimed action is always on its way and an unclaimed one never is.
 *   Messaging writes the message and the dispatcher owns the wire (and checks suppressions again);
 *   the outcome comes back by event (ExecutionOutcomesConsumer).
 */
@Injectable()
export class ExecutionRunner implements RunHandler<'execution'> {
  private readonly outcomes: Counter<'outcome'>;

  constructor(
    private readonly uow: UnitOfWork,
    private readonly review: ReviewRepository,
    private readonly actions: ActionsRepository,
    private readonly enrollments: EnrollmentsRepository,
    private readonly decisions: DecisionsRepository,
    private readonly people: PeopleDirectory,
    private readonly clock: Clock,
    metrics: Metrics,
    @Inject(LOGGER) private readonly logger: Logger,
  ) {
    this.outcomes = new Counter({ name: `${METRIC_PREFIX}outreach_executions_total`, help: 'Execution runs by outcome (claimed, held, invalidated, skipped)', labelNames: ['outcome'], registers: [metrics.registry] });
  }

  async execute(ctx: RunContext<'execution'>): Promise<void> {
    const { action_id: actionId } = ctx.run.input;
    const log = { organization_id: ctx.run.organization_id, action_id: actionId, event_id: ctx.key };
    const row = await this.uow.run((tx) => this.review.withContextById(tx, actionId));
    if (!row || row.status !== 'approved') {
      // Claimed by an earlier run (its send is on the way), or settled: nothing is ever sent twice.
      this.outcomes.inc({ outcome: 'skipped' });
      this.logger.info({ event: 'outreach.execution_skipped', ...log, status: row?.status ?? null }, 'action not approved any more');
      return;
    }
    const recheck = await this.recheck(row);
    const now = this.clock.now();
    if (recheck.verdict === 'hold') {
      await this.uow.run((tx) => this.actions.hold(tx, row.id, now, now));
      this.outcomes.inc({ outcome: 'held' });
      this.logger.info({ event: 'outreach.execution_held', ...log, why: recheck.why }, 'action held until resume');
      return;
    }
    if (recheck.verdict === 'refuse' || recheck.verdict === 'gone') {
      const why = recheck.why;
      await this.uow.run(async (tx) => {
        if (await this.actions.invalidateOne(tx, row.id, ['approved'], why, now)) await this.enrollments.wake(tx, row.enrollment_id, now);
      });
      this.outcomes.inc({ outcome: 'invalidated' });
      this.logger.info({ event: 'outreach.execution_refused', ...log, why }, 'recheck refused the action; enrollment woken');
      return;
    }
    const claimed = await ctx.stepTx('claim', (tx) => this.claimAndSend(tx, row));
    this.outcomes.inc({ outcome: claimed ? 'claimed' : 'skipped' });
    if (claimed) this.logger.info({ event: 'outreach.send_requested', ...log, idempotency_key: claimed }, 'send requested');
  }

  /** Step 1. Throws when a read it needs fails (the run retries): never sends on a guess. */
  private async recheck(row: ActionContextRow): Promise<Recheck> {
    if (!row.approved_payload || row.approved_hash !== approvedHash(row.approved_payload)) return { verdict: 'refuse', why: 'hash_mismatch' };
    if (row.c_status === 'paused') return { verdict: 'hold', why: 'campaign_paused' };
    if (row.stopped_at) return { verdict: 'hold', why: 'outreach_stopped' };
    if (row.c_status !== 'active') return { verdict: 'refuse', why: `campaign_${row.c_status}` };
    if (row.e_status !== 'active') return { verdict: 'gone', why: `enrollment_${row.e_status}` };
    if (row.e_touch_count >= row.c_max_touches) return { verdict: 'refuse', why: 'max_touches' };

    const contact = await this.people.person(row.organization_id, row.person_id);
    if (!contact) return { verdict: 'refuse', why: 'person_removed' };
    const current = recipientOf(row.type, contact);
    if (!sameRecipient(row.approved_payload.to, current)) return { verdict: 'refuse', why: 'recipient_changed' };
    const values = typeof current === 'string' ? [{ channel: 'email' as const, value: current }] : [current!.provider_id, current!.url].filter((v): v is string => !!v).map((value) => ({ channel: 'linkedin' as const, value }));
    if ((await this.people.suppressed(row.organization_id, values)).length > 0) return { verdict: 'refuse', why: 'suppressed' };
    if (row.type !== 'email') {
      if (!(await this.people.senderConnected(row.organization_id, row.c_linkedin_sender_id))) return { verdict: 'refuse', why: 'linkedin_sender_disconnected' };
      if (row.type === 'linkedin_message') {
        const state = await this.people.linkedin({ organization_id: row.organization_id, sender_id: row.c_linkedin_sender_id!, linkedin_url: contact.linkedin_url, provider_id: contact.linkedin_provider_id });
        if (!state) throw new Error('the LinkedIn state cannot be read');
        if (state.state !== 'connected') return { verdict: 'refuse', why: 'linkedin_not_connected' };
      }
    }
    return { verdict: 'send' };
  }

  /** Step 2: the claim and the send command, together or not at all. Returns the send key, or null. */
  private async claimAndSend(tx: Tx, row: ActionContextRow): Promise<string | null> {
    const claimed = await this.actions.claim(tx, row.id, this.clock.now());
    if (!claimed) return null;
    const payload = claimed.approved_payload as { subject?: string; body?: string; note?: string };
    const key = sendKeyOf(claimed.id, claimed.send_attempt);
    const send: MessagingSendData = {
      organization_id: claimed.organization_id,
      idempotency_key: key,
      channel: claimed.type === 'email' ? 'email' : 'linkedin',
      contact_id: row.person_id,
      to: approvedAddress(claimed.approved_payload!.to),
      text: claimed.type === 'linkedin_connection' ? payload.note! : payload.body!,
      sender_type: 'outreach',
      sender_id: claimed.approved_by ?? undefined,
      requester: OUTREACH_REQUESTER,
      // Not held after a reply: the claim (approved → sending) is the send key, and a claimed send
      // goes; the reply's decision sees it in the history (seed 003 §4.6).
      stop_on_reply: false,
      context: { action_id: claimed.id, enrollment_id: claimed.enrollment_id, campaign_id: claimed.campaign_id, outreach_type: claimed.type },
    };
    const sender = claimed.type === 'email' ? row.c_email_sender_id : row.c_linkedin_sender_id;
    if (sender) send.outbox_sender_id = sender;
    if (claimed.type === 'email') {
      const decision = await this.decisions.findById(tx, claimed.decision_id);
      const replyTo = decision?.reply_to ?? null;
      if (replyTo) {
        // In the answered message's thread, as a reply to it (seed 003 §4.6).
        if (replyTo.conversation_id) send.conversation_id = replyTo.conversation_id;
        if (replyTo.external_id) send.reply_to_external_id = replyTo.external_id;
        if (replyTo.subject) send.subject = /^re:/i.test(replyTo.subject.trim()) ? replyTo.subject.trim() : `Re: ${replyTo.subject.trim()}`;
      } else if (payload.subject) send.subject = payload.subject;
    } else {
      // An invitation carries its note; a message goes into the chat (the adapter tells them apart).
      send.context!.linkedin_action = claimed.type === 'linkedin_connection' ? 'invite' : 'message';
    }
    await tx.publish({ event_id: `outreach.send:${key}`, type: MessagingCommands.Send, organization_id: claimed.organization_id, data: send });
    return key;
  }

  /**
   * An execution run that failed for good leaves the action approved, and the due sweep asks again
   * within OUTREACH_SWEEP_INTERVAL_MS. The sweep's event id is `approved:{id}:{next_attempt_at}`,
   * the failed run's own key when the action was never held: so the next attempt moves to now, or
   * the sweep would repeat an id the runners already spent and the action would stay approved for
   * ever (the chaos run's stuck outreach sends, issue 17).
   */
  async onFailure(run: RunRow, error: string): Promise<void> {
    const now = this.clock.now();
    await this.uow.run((tx) => this.actions.hold(tx, run.subject_id, now, now));
    this.logger.error({ event: 'outreach.execution_failed', organization_id: run.organization_id, action_id: run.subject_id, err: error }, 'execution failed for good; the sweep will ask again');
  }
}
