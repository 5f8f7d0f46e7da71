import { Inject, Injectable } from '@nestjs/common';
import { OnBusMessage } from '@touchpoint/bus';
import { type BusMessage, type MessageOutcomeData, MessagingEvents, type OutboxEntryEventData, OutboxEvents } from '@touchpoint/contracts';
import type { Tx } from '@touchpoint/database';
import type { Logger } from '@touchpoint/observability';
import { LOGGER } from '@touchpoint/runtime';
import { Clock } from '@touchpoint/time';
import { DecisionsRepository } from '../decisions/decisions.repository.js';
import { EnrollmentsRepository } from '../enrollments/enrollments.repository.js';
import { ActionsRepository } from '../review/actions.repository.js';
import { addMs, DAY_MS } from '../decisions/next-check.js';
import { OUTREACH_REQUESTER } from './execution.runner.js';

/** Sender refusals that invalidate the action (seed 003 §5: sending → invalidated). */
const REFUSALS = new Set(['suppressed', 'already_connected', 'cancelled']);
/** Holds where nothing was sent: the action goes back to approved (seed 003 §5: sending → approved). */
const HOLDS = new Set(['connection_held', 'prospect_send_cap_reached', 'prospect_cap']);
/** How long a held LinkedIn invitation waits before the next try (ours: the seed names no delay). */
const CONNECTION_HELD_RETRY_MS = DAY_MS;

/** The action an outreach send was for (`action_id` in its context), or null for anyone else's send. */
function actionOf(requester: string | undefined, context: Record<string, string | number> | undefined | null): string | null {
  if (requester !== OUTREACH_REQUESTER) return null;
  const id = context?.action_id;
  return typeof id === 'string' ? id : null;
}

/** Messaging's outcome of an outreach action's send (the `when` of messaging's events). */
const ourMessage = (message: BusMessage<MessageOutcomeData>): boolean => actionOf(message.data?.requester, message.data?.context) !== null;

/** The dispatcher's ambiguous outcome of an outreach action's send. */
const ourEntry = (message: BusMessage<OutboxEntryEventData>): boolean => actionOf(message.data?.log_context?.requester as string | undefined, message.data?.log_context) !== null;

/** The next 00:00 UTC after `now` (seed 003 §6: the prospect cap holds the action until then). */
export function nextUtcMidnight(now: Date): Date {
  return new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate() + 1));
}

/**
 * Records what became of an outreach send (seed 003 §4.6, "step record"): the outcome events of
 * messaging (`messaging.message.sent | failed | cancelled`, requester outreach) and the
 * dispatcher's `outbox.entry.ambiguous`, matched to the action by the `action_id` echoed in their
 * context.
 * - sent → `executed` with the message and provider ids; the enrollment gets touch_count + 1 and
 *   `next_check_at = executed_at + followup_days` only where it is null (a reply's "now" wins), no
 *   version bump.
 * - ambiguous → `failed` with outcome unknown: never sent again, and it counts as a touch.
 * - a refusal (suppressed, already connected, cancelled) → `invalidated`, the enrollment woken;
 *   a hold (connection held, the prospect cap) → back to `approved` with its next attempt;
 *   any other failure → `failed`, and the enrollment gets a next check now (it had none).
 */
@Injectable()
export class ExecutionOutcomesConsumer {
  constructor(
    private readonly actions: ActionsRepository,
    private readonly enrollments: EnrollmentsRepository,
    private readonly decisions: DecisionsRepository,
    private readonly clock: Clock,
    @Inject(LOGGER) private readonly logger: Logger,
  ) {}

  @OnBusMessage(MessagingEvents.MessageSent, { when: ourMessage })
  async onSent(message: BusMessage<MessageOutcomeData>, tx: Tx): Promise<void> {
    const actionId = actionOf(message.data?.requester, message.data?.context);
    if (!actionId) return;
    const before = await this.actions.findById(tx, actionId);
    if (!before) return;
    const now = this.clock.now();
    const executed = await this.actions.markExecuted(tx, actionId, { executed_at: before.executed_at ?? now, message_id: message.data.message_id, conversation_id: message.data.conversation_id, provider_message_id: message.data.provider_message_id ?? null });
    if (!executed) return;
    // An ambiguous send settled as accepted was already counted as a touch.
    if (before.status === 'sending') await this.touch(tx, executed.enrollment_id, executed.decision_id, executed.executed_at!, now);
    this.logger.info({ event: 'outreach.action_executed', organization_id: message.organization_id, action_id: actionId, message_id: message.data.message_id }, 'action executed');
  }

  @OnBusMessage(MessagingEvents.MessageFailed, { when: ourMessage })
  async onFailed(message: BusMessage<MessageOutcomeData>, tx: Tx): Promise<void> {
    const actionId = actionOf(message.data?.requester, message.data?.context);
    if (actionId) await this.failed(tx, message.organization_id, actionId, message.data.error_code ?? 'failed', message.data.message_id, message.data.conversation_id);
  }

  @OnBusMessage(MessagingEvents.MessageCancelled, { when: ourMessage })
  async onCancelled(message: BusMessage<MessageOutcomeData>, tx: Tx): Promise<void> {
    const actionId = actionOf(message.data?.requester, message.data?.context);
    if (actionId) await this.failed(tx, message.organization_id, actionId, 'cancelled', message.data.message_id, message.data.conversation_id);
  }

  @OnBusMessage(OutboxEvents.EntryAmbiguous, { when: ourEntry })
  async onAmbiguous(message: BusMessage<OutboxEntryEventData>, tx: Tx): Promise<void> {
    const context = message.data?.log_context;
    const actionId = actionOf(context?.requester as string | undefined, context);
    if (!actionId) return;
    const now = this.clock.now();
    const failed = await this.actions.markFailed(tx, actionId, {
      reason: 'outcome_unknown',
      outcome_unknown: true,
      message_id: typeof context?.message_id === 'string' ? context.message_id : null,
      conversation_id: typeof context?.conversation_id === 'string' ? context.conversation_id : null,
      now,
    });
    if (!failed) return;
    // A duplicate message is worse than a missed one: never sent again, and counted as a touch.
    await this.touch(tx, failed.enrollment_id, failed.decision_id, now, now);
    this.logger.warn({ event: 'outreach.send_outcome_unknown', organization_id: message.organization_id, action_id: actionId, entry_id: message.data.entry_id }, 'send outcome unknown; counted as a touch, never sent again');
  }

  private async failed(tx: Tx, organizationId: string | null, actionId: string, code: string, messageId: string | null, conversationId: string | null): Promise<void> {
    const now = this.clock.now();
    const log = { organization_id: organizationId, action_id: actionId, code };
    if (REFUSALS.has(code)) {
      const refused = await this.actions.markRefused(tx, actionId, code, now);
      if (refused) await this.enrollments.wake(tx, refused.enrollment_id, now);
      if (refused) this.logger.info({ event: 'outreach.send_refused', ...log }, 'the sender refused the action; enrollment woken');
      return;
    }
    if (HOLDS.has(code)) {
      const at = code === 'connection_held' ? addMs(now, CONNECTION_HELD_RETRY_MS) : nextUtcMidnight(now);
      if (await this.actions.release(tx, actionId, code, at, now)) this.logger.info({ event: 'outreach.send_held', ...log, next_attempt_at: at.toISOString() }, 'nothing sent; held for a later attempt');
      return;
    }
    const failed = await this.actions.markFailed(tx, actionId, { reason: code, outcome_unknown: false, message_id: messageId, conversation_id: conversationId, now });
    if (!failed) return;
    // The draft save cleared next_check_at; without a next check the enrollment would never be due.
    await this.enrollments.dueIfUnscheduled(tx, failed.enrollment_id, now);
    this.logger.warn({ event: 'outreach.send_failed', ...log }, 'send failed for good');
  }

  /** touch_count + 1 and the next check after the decision's follow-up days, only where none is set. */
  private async touch(tx: Tx, enrollmentId: string, decisionId: string, executedAt: Date, now: Date): Promise<void> {
    const decision = await this.decisions.findById(tx, decisionId);
    await this.enrollments.recordTouch(tx, enrollmentId, addMs(new Date(executedAt), (decision?.followup_days ?? 1) * DAY_MS), now);
  }
}
