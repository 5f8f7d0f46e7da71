import { Inject, Injectable } from '@nestjs/common';
import { Counter } from 'prom-client';
import { type MessageStatusChangedData, MessagingEvents, type NotificationDeliveryUpdatedData, type OutboxEntryEventData, OutboxEnqueueErrorCode } from '@touchpoint/contracts';
import type { Tx } from '@touchpoint/database';
import { type Logger, METRIC_PREFIX, Metrics } from '@touchpoint/observability';
import { LOGGER } from '@touchpoint/runtime';
import { Clock } from '@touchpoint/time';
import { nextStatus } from '../messages/message-status.js';
import { type MessageRow, MessagesRepository, type StatusReport } from '../messages/messages.repository.js';
import { NotificationsRepository } from '../notifications/notifications.repository.js';
import { StreamRepository } from '../stream/stream.repository.js';
import { isDoNotContact, outcomeData } from './send.service.js';

const ENQUEUE_ERROR_CODES = new Set<string>(Object.values(OutboxEnqueueErrorCode));

/**
 * Applies what the dispatcher and the provider report to outbound message rows (seed 004):
 * the entry outcomes (`outbox.entry.*`) and the delivery statuses, forward only, keeping a status
 * that arrives before its message knows the provider id until it does. Emits
 * `messaging.message.sent | failed | cancelled` for the requester and settles notification
 * deliveries.
 */
@Injectable()
export class OutcomesService {
  private readonly statuses: Counter<'status' | 'outcome'>;

  constructor(
    private readonly messages: MessagesRepository,
    private readonly notifications: NotificationsRepository,
    private readonly stream: StreamRepository,
    private readonly clock: Clock,
    metrics: Metrics,
    @Inject(LOGGER) private readonly logger: Logger,
  ) {
    this.statuses = new Counter({
      name: `${METRIC_PREFIX}messaging_statuses_total`,
      help: 'Delivery statuses reported for outbound messages, by status and outcome (applied, ignored, pending)',
      labelNames: ['status', 'outcome'],
      registers: [metrics.registry],
    });
  }

  /** The message an entry event is about: by the log context's message id, else by the key. */
  private async messageOf(tx: Tx, organizationId: string, data: OutboxEntryEventData): Promise<MessageRow | null> {
    const id = data.log_context?.message_id;
    if (typeof id === 'string') {
      const row = await this.messages.findById(tx, organizationId, id, true);
      if (row) return row;
    }
    return data.idempotency_key ? this.messages.findByIdempotencyKey(tx, organizationId, data.idempotency_key, true) : null;
  }

  /** `outbox.entry.accepted` (and a resolution as accepted): the provider id is known, the message is sent. */
  async accepted(tx: Tx, organizationId: string, data: OutboxEntryEventData): Promise<void> {
    // Before the row lock (the order `status` takes them in): see `status` for why.
    if (data.provider_message_id) await this.messages.lockProviderId(tx, organizationId, data.provider_message_id);
    const message = await this.messageOf(tx, organizationId, data);
    if (!message) return; // read receipts and sends that are not messages have no row
    const at = this.clock.now();
    if (data.provider_message_id && !message.external_id) {
      await this.messages.setExternalId(tx, message.id, data.provider_message_id);
      message.external_id = data.provider_message_id;
    }
    await this.move(tx, message, 'sent', at, {});
    if (message.external_id) {
      for (const report of await this.messages.takePendingStatuses(tx, organizationId, message.channel, message.external_id)) {
        const fresh = (await this.messages.findById(tx, organizationId, message.id, true))!;
        await this.move(tx, fresh, report.status, report.at, { code: report.error_code, message: report.error_message, details: report.error_details });
        this.statuses.inc({ status: report.status, outcome: 'replayed' });
      }
    }
  }

  /** `outbox.entry.failed` (and a resolution as rejected): terminal failure, enqueue or delivery. */
  async failed(tx: Tx, organizationId: string, data: OutboxEntryEventData): Promise<void> {
    const message = await this.messageOf(tx, organizationId, data);
    if (!message) return;
    // Refused at enqueue (nothing was ever queued at the dispatcher) versus queued but undeliverable.
    const stage = !data.attempts && !data.classification && data.error_code && ENQUEUE_ERROR_CODES.has(data.error_code) ? 'enqueue' : 'delivery';
    await this.move(tx, message, 'failed', this.clock.now(), { code: data.error_code ?? data.classification ?? null, message: data.error_message ?? null, subcode: data.error_subcode ?? null, details: data.error_details ?? null }, stage);
  }

  /**
   * `outbox.entry.cancelled`: cancelled before it was claimed, by key or because its address was
   * suppressed (then the message, its notification delivery and the requester's event carry the
   * code `suppressed`).
   */
  async cancelled(tx: Tx, organizationId: string, data: OutboxEntryEventData): Promise<void> {
    const message = await this.messageOf(tx, organizationId, data);
    if (!message) return;
    await this.move(tx, message, 'cancelled', this.clock.now(), { code: data.reason === 'suppressed' ? 'suppressed' : null });
  }

  /**
   * `outbox.entry.ambiguous`: the dispatcher does not know whether the send left and never retries
   * it; the message shows `ambiguous` with the entry id an operator resolves (`/outbox/ambiguous`),
   * until `outbox.entry.resolved` (or a provider status) moves it on.
   */
  async ambiguous(tx: Tx, organizationId: string, data: OutboxEntryEventData): Promise<void> {
    const message = await this.messageOf(tx, organizationId, data);
    if (!message) return;
    this.logger.warn({ event: 'messaging.send_ambiguous', organization_id: organizationId, message_id: message.id, entry_id: data.entry_id }, 'send outcome unknown; waiting for correlation');
    if (data.entry_id && !message.outbox_entry_id) {
      await this.messages.setOutboxEntry(tx, message.id, data.entry_id);
      message.outbox_entry_id = data.entry_id;
    }
    await this.move(tx, message, 'ambiguous', this.clock.now(), {});
    await this.stream.append(tx, organizationId, 'messaging.message.ambiguous', { message_id: message.id, conversation_id: message.conversation_id, entry_id: data.entry_id });
  }

  /**
   * A provider delivery status for `report.external_id`. Applied forward-only to the message that
   * has that provider id; kept in `pending_statuses` when no message has it yet.
   * @param messageHint the message id from the entry's log context, when the event carries it
   */
  async status(tx: Tx, report: StatusReport, messageHint?: string | null): Promise<'applied' | 'ignored' | 'pending'> {
    // A status racing the acceptance that sets this id (READ COMMITTED): the lookup below cannot see
    // the acceptance's uncommitted id, and the acceptance's take of pending statuses cannot see this
    // uncommitted pending row, so both would commit and the status would stay pending for good. The
    // acceptance holds this lock from before it sets the id until it commits, so the lookup here runs
    // after that commit (and finds the message) or the acceptance takes the pending row after this
    // commits. Taken before any row lock, as `accepted` (and the outcome sweep) take it.
    await this.messages.lockProviderId(tx, report.organization_id, report.external_id);
    let message = await this.messages.findByExternalId(tx, report.organization_id, report.channel, report.external_id, true);
    if (!message && messageHint) {
      const hinted = await this.messages.findById(tx, report.organization_id, messageHint, true);
      // The locked re-read may carry this very id, set by an acceptance committed meanwhile: it is the message.
      if (hinted && (!hinted.external_id || hinted.external_id === report.external_id)) {
        if (!hinted.external_id) await this.messages.setExternalId(tx, hinted.id, report.external_id);
        message = { ...hinted, external_id: report.external_id };
      }
    }
    if (!message) {
      await this.messages.addPendingStatus(tx, report, this.clock.now());
      this.statuses.inc({ status: report.status, outcome: 'pending' });
      return 'pending';
    }
    const moved = await this.move(tx, message, report.status, report.at, { code: report.error_code, message: report.error_message, details: report.error_details });
    this.statuses.inc({ status: report.status, outcome: moved ? 'applied' : 'ignored' });
    return moved ? 'applied' : 'ignored';
  }

  /**
   * Moves a locked message by one report, forward only (`nextStatus`), stamping the report's time
   * even when the status itself stays; then tells the requester and settles a notification delivery.
   */
  private async move(tx: Tx, message: MessageRow, reported: string, at: Date, error: { code?: string | null; message?: string | null; subcode?: string | null; details?: string | null }, stage: 'enqueue' | 'delivery' = 'delivery'): Promise<boolean> {
    if (message.direction !== 'outbound') return false;
    const to = nextStatus(message.status, reported);
    await this.messages.setStatus(tx, message.id, to, reported, at, error);
    if (!to) return false;
    const from = message.status;
    message.status = to;
    const changed: MessageStatusChangedData = {
      message_id: message.id,
      conversation_id: message.conversation_id,
      contact_id: message.contact_id,
      channel: message.channel,
      from,
      to,
      provider_message_id: message.external_id,
    };
    await this.stream.append(tx, message.organization_id, MessagingEvents.MessageStatusChanged, changed);

    if ((from === 'queued' || from === 'ambiguous') && (to === 'sent' || to === 'delivered' || to === 'read')) {
      await tx.publish({ event_id: `messaging.message.sent:${message.id}`, type: MessagingEvents.MessageSent, organization_id: message.organization_id, data: outcomeData(message, 'sent') });
      await this.settleDelivery(tx, message, 'sent', null);
    }
    if (to === 'delivered' || to === 'read') {
      // For requesters that act on it (a follow-up's "only if not read"); a message reaches each once.
      await tx.publish({
        event_id: `messaging.message.${to}:${message.id}`,
        type: to === 'delivered' ? MessagingEvents.MessageDelivered : MessagingEvents.MessageRead,
        organization_id: message.organization_id,
        data: { ...outcomeData(message, to), status_at: at.toISOString() },
      });
    } else if (to === 'failed') {
      await tx.publish({
        event_id: `messaging.message.failed:${message.id}`,
        type: MessagingEvents.MessageFailed,
        organization_id: message.organization_id,
        data: { ...outcomeData(message, 'failed'), failure_stage: stage, error_code: error.code ?? null, error_subcode: error.subcode ?? null, error_details: error.details ?? null },
      });
      // A do-not-contact refusal is the platform doing its job, not a fault to page anyone about.
      this.logger[isDoNotContact(error.code) ? 'info' : 'error'](
        {
          event: stage === 'enqueue' ? 'messaging.send_enqueue_failed' : 'messaging.send_delivery_failed',
          organization_id: message.organization_id,
          message_id: message.id,
          conversation_id: message.conversation_id,
          idempotency_key: message.idempotency_key,
          requester: message.requester,
          code: error.code ?? null,
        },
        stage === 'enqueue' ? 'send was refused at enqueue' : 'send could not be delivered',
      );
      await this.settleDelivery(tx, message, 'failed', error.code ?? 'failed');
    } else if (to === 'cancelled') {
      await tx.publish({
        event_id: `messaging.message.cancelled:${message.id}`,
        type: MessagingEvents.MessageCancelled,
        organization_id: message.organization_id,
        data: { ...outcomeData(message, 'cancelled'), error_code: error.code ?? null },
      });
      await this.settleDelivery(tx, message, 'failed', error.code ?? 'cancelled');
    }
    return true;
  }

  /**
   * Settles the notification delivery of a settled (locked) message from the message's own status:
   * `sent` for sent/delivered/read, `failed` with its error code for failed/cancelled. For the
   * outcome sweep, when the write that should have settled it did not happen.
   * @returns true when a pending delivery was settled
   */
  async settleDeliveryOf(tx: Tx, message: MessageRow): Promise<boolean> {
    if (message.status === 'sent' || message.status === 'delivered' || message.status === 'read') return this.settleDelivery(tx, message, 'sent', null);
    if (message.status === 'failed' || message.status === 'cancelled') return this.settleDelivery(tx, message, 'failed', message.error_code ?? message.status);
    return false;
  }

  private async settleDelivery(tx: Tx, message: MessageRow, status: 'sent' | 'failed', errorCode: string | null): Promise<boolean> {
    if (!message.notification_delivery_id) return false;
    const delivery = await this.notifications.settleDelivery(tx, message.notification_delivery_id, status, errorCode, this.clock.now());
    if (!delivery) return false;
    const data: NotificationDeliveryUpdatedData = {
      notification_id: delivery.notification_id,
      delivery_id: delivery.id,
      channel: delivery.channel,
      status: delivery.status,
      message_id: message.id,
      error_code: delivery.error_code,
    };
    // A delivery reaches each status once (pending → sent → failed at most), so the id names both.
    await tx.publish({ event_id: `messaging.notification.delivery_updated:${delivery.id}:${delivery.status}`, type: MessagingEvents.NotificationDeliveryUpdated, organization_id: message.organization_id, data: data });
    await this.stream.append(tx, message.organization_id, MessagingEvents.NotificationDeliveryUpdated, data);
    return true;
  }
}
