import { Inject, Injectable } from '@nestjs/common';
import { FollowupsEvents, OutboxCommands, type OutboxCancelData, type OutgoingMessage } from '@touchpoint/contracts';
import type { Tx } from '@touchpoint/database';
import type { Logger } from '@touchpoint/observability';
import { LOGGER, WakeSignal } from '@touchpoint/runtime';
import { AgentsRepository } from '../agents/agents.repository.js';
import { ContactsRepository } from '../contacts/contacts.repository.js';
import { EnrollmentsRepository } from '../enrollments/enrollments.repository.js';
import { FollowupsMetrics } from '../metrics/followups.metrics.js';
import { PromisesRepository } from '../promises/promises.repository.js';
import { INSTANCE_UNAVAILABLE } from '../release/number-chain.js';
import { type QueuedSendScope, StopPathsRepository, type TouchedEnrollment } from './stop-paths.repository.js';

const FINISHED = new Set(['completed', 'cancelled', 'dead']);

/**
 * The reply wins (DESIGN §5.3; seed 000 "Stop paths and ordering"): a reply, opt-out, human
 * message, resolution or erasure stops or interrupts every affected enrollment in the transaction
 * that records it, and asks the dispatcher to cancel each of the affected follow-up sends still
 * queued (`outbox.cancel`), whatever its enrollment's status, which it does unless its send lane
 * has already claimed it.
 *
 * Every method takes the caller's transaction: the bus edge (messaging's events) and the REST edge
 * (flow archived) both call here.
 */
@Injectable()
export class StopPathsService {
  constructor(
    private readonly repository: StopPathsRepository,
    private readonly contacts: ContactsRepository,
    private readonly enrollments: EnrollmentsRepository,
    private readonly promises: PromisesRepository,
    private readonly agents: AgentsRepository,
    private readonly metrics: FollowupsMetrics,
    private readonly signal: WakeSignal,
    @Inject(LOGGER) private readonly logger: Logger,
  ) {}

  /**
   * An inbound message. An opt-out stops everything; an automatic answer (out of office) is not a
   * reply; otherwise waiting enrollments take their `replied` exit and the others stop when they
   * `cancel_on_reply`.
   */
  async onInbound(tx: Tx, m: { organizationId: string; contactId: string; conversationId: string | null; senderId?: string | null; text: string | null; at: Date; optOut: boolean; autoReply: boolean }, now: Date): Promise<TouchedEnrollment[]> {
    if (m.autoReply) return [];
    // The contact row first: from here on a release of this contact cannot start (it skips the lock).
    await this.contacts.recordInbound(tx, { organizationId: m.organizationId, contactId: m.contactId, at: m.at, text: m.text, conversationId: m.conversationId, senderId: m.senderId ?? null, optOut: m.optOut });
    if (m.optOut) return this.onOptOut(tx, m.organizationId, m.contactId, m.at, now);
    const touched = await this.repository.applyReply(tx, m.organizationId, m.contactId, m.text, m.at, now);
    await this.settle(tx, touched, now, 'reply', { organizationId: m.organizationId, contactId: m.contactId, only: 'cancel_on_reply', at: m.at });
    if (touched.some((t) => t.status === 'active')) this.signal.wake();
    return touched;
  }

  /** The contact asked not to be contacted: every live enrollment and pending one-off return is cancelled (`opted_out`). */
  async onOptOut(tx: Tx, organizationId: string, contactId: string, at: Date, now: Date): Promise<TouchedEnrollment[]> {
    await this.contacts.markOptedOut(tx, organizationId, contactId, at);
    await this.cancelPromises(tx, organizationId, contactId, 'opted_out', now);
    const touched = await this.repository.stop(tx, { organizationId, contactId }, 'cancelled', 'opted_out', now);
    await this.settle(tx, touched, now, 'opt_out', { organizationId, contactId });
    return touched;
  }

  /** An operator wrote to the contact: each enrollment follows its `handoff_policy`. */
  async onHumanMessage(tx: Tx, organizationId: string, contactId: string, conversationId: string | null, at: Date, now: Date): Promise<TouchedEnrollment[]> {
    await this.contacts.markHandoff(tx, organizationId, contactId, at, conversationId);
    const touched = await this.repository.applyHandoff(tx, organizationId, contactId, at, now);
    await this.settle(tx, touched, now, 'handoff', { organizationId, contactId, only: 'handoff', at });
    return touched;
  }

  /** The conversation was resolved: its enrollments (and the contact's unattached ones) complete. */
  async onConversationResolved(tx: Tx, organizationId: string, contactId: string, conversationId: string, now: Date): Promise<TouchedEnrollment[]> {
    await this.contacts.touch(tx, organizationId, contactId);
    const touched = await this.repository.stop(tx, { organizationId, contactId, conversationId }, 'completed', 'conversation_resolved', now);
    await this.settle(tx, touched, now, 'conversation_resolved', { organizationId, contactId, only: 'conversation', conversationId });
    return touched;
  }

  /**
   * The contact's lead was closed in the CRM (seed 000 "Stop hooks": lead closed): every live
   * enrollment and every pending one-off return of the contact is cancelled with reason
   * `lead_won` or `lead_lost`, and its queued follow-up sends are taken back like on a reply.
   */
  async onLeadClosed(tx: Tx, organizationId: string, contactId: string, closed: 'won' | 'lost', now: Date): Promise<TouchedEnrollment[]> {
    await this.contacts.touch(tx, organizationId, contactId);
    await this.cancelPromises(tx, organizationId, contactId, `lead_${closed}`, now);
    const touched = await this.repository.stop(tx, { organizationId, contactId }, 'cancelled', `lead_${closed}`, now);
    await this.settle(tx, touched, now, 'lead_closed', { organizationId, contactId });
    return touched;
  }

  /**
   * The contact was erased: every enrollment and pending one-off return is cancelled
   * (`contact_erased`) and the personal fields kept here are wiped, the texts of the agents' turn
   * promises to the contact among them.
   */
  async onContactErased(tx: Tx, organizationId: string, contactId: string, now: Date): Promise<TouchedEnrollment[]> {
    await this.contacts.markErased(tx, organizationId, contactId, now);
    await this.agents.deleteContactPromises(tx, organizationId, contactId);
    await this.cancelPromises(tx, organizationId, contactId, 'contact_erased', now);
    const touched = await this.repository.stop(tx, { organizationId, contactId }, 'cancelled', 'contact_erased', now);
    await this.settle(tx, touched, now, 'contact_erased', { organizationId, contactId });
    return touched;
  }

  /** The contact's one-off returns that have not fired are cancelled with `reason` (seed 000 "Stop hooks"). */
  private async cancelPromises(tx: Tx, organizationId: string, contactId: string, reason: string, now: Date): Promise<void> {
    const cancelled = await this.promises.cancelPendingOfContact(tx, organizationId, contactId, reason, now);
    if (cancelled.length) {
      this.metrics.promises.inc({ outcome: 'cancelled' }, cancelled.length);
      this.logger.info({ event: 'followups.promises_cancelled', organization_id: organizationId, reason, promise_ids: cancelled.map((p) => p.id) }, 'stop path cancelled pending one-off returns');
    }
  }

  /** The flow was archived: its live enrollments are cancelled (`flow_archived`). */
  async stopFlow(tx: Tx, organizationId: string, flowId: string, now: Date): Promise<TouchedEnrollment[]> {
    const touched = await this.repository.stop(tx, { organizationId, flowId }, 'cancelled', 'flow_archived', now);
    await this.settle(tx, touched, now, 'flow_archived', { organizationId, flowId });
    return touched;
  }

  /** The flow is active again: enrollments the release loop parked because it was paused resume. */
  async resumeParkedByFlow(tx: Tx, organizationId: string, flowId: string, now: Date): Promise<void> {
    const woken = await this.repository.wakeParked(tx, { organizationId, flowId }, 'flow_paused', now);
    await this.enrollments.insertEvents(
      tx,
      woken.map((w) => ({ organization_id: organizationId, enrollment_id: w.id, type: 'resumed', node_id: w.node_id, data: { cause: 'flow_active' }, at: now })),
    );
    if (woken.length) this.signal.wake();
  }

  /** A sender connected: enrollments parked for want of a usable number retry now. */
  async resumeParkedBySender(tx: Tx, organizationId: string, now: Date): Promise<void> {
    const woken = await this.repository.wakeParked(tx, { organizationId }, INSTANCE_UNAVAILABLE, now);
    await this.enrollments.insertEvents(
      tx,
      woken.map((w) => ({ organization_id: organizationId, enrollment_id: w.id, type: 'resumed', node_id: w.node_id, data: { cause: 'sender_connected' }, at: now })),
    );
    if (woken.length) this.signal.wake();
  }

  /**
   * After an UPDATE … RETURNING: the timeline, the finished events and metrics of the enrollments
   * it touched, and an `outbox.cancel` for every follow-up send of `scope` still queued — also
   * those of enrollments that had already finished by queuing their last send, which the UPDATE
   * does not touch. The dispatcher cancels what its send lane has not claimed and reports it
   * (`outbox.entry.cancelled`, applied to the effect by SendOutcomesService); a send it already
   * claimed goes out and is reported sent.
   */
  private async settle(tx: Tx, touched: TouchedEnrollment[], now: Date, cause: string, scope: QueuedSendScope): Promise<void> {
    const messages: OutgoingMessage[] = [];
    for (const t of touched) {
      if (FINISHED.has(t.status)) {
        messages.push({
          event_id: `followups.enrollment.finished:${t.id}`,
          type: FollowupsEvents.EnrollmentFinished,
          organization_id: t.organization_id,
          data: { enrollment_id: t.id, flow_id: t.flow_id, contact_id: t.contact_id, status: t.status, reason: t.reason },
        });
        this.metrics.finished.inc({ status: t.status, reason: t.reason ?? cause });
      }
    }
    const queued = await this.repository.queuedSends(tx, scope);
    for (const effect of queued) {
      const data: OutboxCancelData = { organization_id: scope.organizationId, idempotency_key: effect.idempotency_key };
      messages.push({ event_id: `outbox.cancel:${effect.idempotency_key}`, type: OutboxCommands.Cancel, organization_id: data.organization_id, data: data });
    }
    await this.enrollments.insertEvents(tx, [
      ...touched.map((t) => ({
        organization_id: t.organization_id,
        enrollment_id: t.id,
        type: FINISHED.has(t.status) ? 'stopped' : t.status === 'paused_handoff' ? 'paused' : cause === 'reply' && t.status === 'active' ? 'reply_received' : 'noted',
        node_id: t.node_id,
        data: { cause, status: t.status, reason: t.reason },
        at: now,
      })),
      // Why the send that follows may end `cancelled` (or `sent`, if the send lane had claimed it).
      ...queued.map((q) => ({
        organization_id: scope.organizationId,
        enrollment_id: q.enrollment_id,
        type: 'send_cancel_requested',
        node_id: q.node_id,
        data: { cause, effect_id: q.id, idempotency_key: q.idempotency_key, enrollment_status: q.enrollment_status },
        at: now,
      })),
    ]);
    await tx.publish(messages);
    if (queued.length) this.logger.info({ event: 'followups.queued_send_cancel_requested', organization_id: scope.organizationId, cause, keys: queued.map((q) => q.idempotency_key) }, 'asked the dispatcher to cancel queued follow-ups');
  }
}
