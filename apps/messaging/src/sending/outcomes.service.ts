import { Inject, Injectable } from '@nestjs/common';
import { Counter } from 'prom-client';
import { type MessageStatusChangedData, MessagingEvents, type NotificationDeliveryUpdatedData, type OutboxEntryEventData, OutboxEnqueueErrorCode, type OutgoingMessage } from '@touchpoint/contracts';
import { CommitBatch, type Tx } from '@touchpoint/database';
import { type Logger, METRIC_PREFIX, Metrics } from '@touchpoint/observability';
import { LOGGER } from '@touchpoint/runtime';
import { Clock } from '@touchpoint/time';
import { nextStatus } from '../messages/message-status.js';
import { type MessageRow, MessagesRepository, type SavedStatus, type StatusReport } from '../messages/messages.repository.js';
import { NotificationsRepository } from '../notifications/notifications.repository.js';
import { StreamRepository } from '../stream/stream.repository.js';
import { isDoNotContact, outcomeData } from './send.service.js';

const ENQUEUE_ERROR_CODES = new Set<string>(Object.values(OutboxEnqueueErrorCode));

/** What became of one provider status. */
export type StatusOutcome = 'applied' | 'ignored' | 'pending';

/** A provider status and the message id its event's log context named, if any. */
export interface StatusItem {
  report: StatusReport;
  hint: string | null;
}

/** The error a move to `failed` or `cancelled` records. */
interface MoveError {
  code?: string | null;
  message?: string | null;
  subcode?: string | null;
  details?: string | null;
}

/** What the moves of one handler (or one batch of statuses) changed, for `write` to store together. */
class Moves {
  /** Locked message rows that changed, by id, with the failed/cancelled move made, if any. */
  readonly rows = new Map<string, { message: MessageRow; terminal?: Partial<SavedStatus> }>();
  readonly events: OutgoingMessage[] = [];
  readonly feed: { organization_id: string; type: string; data: object }[] = [];
  readonly settle: { message: MessageRow; status: 'sent' | 'failed'; code: string | null }[] = [];

  touch(message: MessageRow, terminal?: Partial<SavedStatus>): void {
    const row = this.rows.get(message.id);
    if (!row) this.rows.set(message.id, { message, terminal });
    else if (terminal) row.terminal = terminal;
  }
}

/** Sets the delivery stamps a reported status implies, each once (sent ⊂ delivered ⊂ read); true if one was unset. */
function stamp(message: MessageRow, reported: string, at: Date): boolean {
  let changed = false;
  if ((reported === 'sent' || reported === 'delivered' || reported === 'read') && !message.sent_at) [message.sent_at, changed] = [at, true];
  if ((reported === 'delivered' || reported === 'read') && !message.delivered_at) [message.delivered_at, changed] = [at, true];
  if (reported === 'read' && !message.read_at) [message.read_at, changed] = [at, true];
  return changed;
}

const providerKey = (organizationId: string, channel: string, externalId: string) => `${organizationId}\u0000${channel}\u0000${externalId}`;

/** The row `byId` already holds for `row.id` (its in-memory state is the newer one), else `row`, remembered. */
function remember(byId: Map<string, MessageRow>, row: MessageRow): MessageRow {
  const known = byId.get(row.id);
  if (known) return known;
  byId.set(row.id, row);
  return row;
}

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
  private readonly statusBatch = new CommitBatch<StatusItem>(async (tx, items) => void (await this.applyStatuses(tx, items)));

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

  /**
   * Takes, for a consumer batch of entry outcomes, the locks its handlers take one by one, in one
   * order: the provider ids' advisory locks, then the messages' rows, each sorted. The handlers
   * then find them held. Locked in arrival order, an acceptance batch and a status batch (which
   * locks its rows in id order) deadlocked on each other's messages.
   */
  async lockOutcomeBatch(tx: Tx, outcomes: { organizationId: string; data: OutboxEntryEventData }[]): Promise<void> {
    const withIds = outcomes.filter((o) => o.data?.provider_message_id);
    await this.messages.lockProviderIds(
      tx,
      withIds.map((o) => o.organizationId),
      withIds.map((o) => o.data.provider_message_id!),
    );
    const ids = outcomes.map((o) => o.data?.log_context?.message_id).filter((id): id is string => typeof id === 'string');
    await this.messages.lockByIds(tx, ids);
  }

  /** `outbox.entry.accepted` (and a resolution as accepted): the provider id is known, the message is sent. */
  async accepted(tx: Tx, organizationId: string, data: OutboxEntryEventData): Promise<void> {
    await this.statusBatch.flush(tx);
    // Before the row lock (the order `status` takes them in): see `findLate` for why.
    if (data.provider_message_id) await this.messages.lockProviderId(tx, organizationId, data.provider_message_id);
    const message = await this.messageOf(tx, organizationId, data);
    if (!message) return; // read receipts and sends that are not messages have no row
    const moves = new Moves();
    if (data.provider_message_id && !message.external_id) {
      message.external_id = data.provider_message_id;
      moves.touch(message);
    }
    this.move(moves, message, 'sent', this.clock.now(), {});
    if (message.external_id) {
      for (const report of await this.messages.takePendingStatuses(tx, organizationId, message.channel, message.external_id)) {
        this.move(moves, message, report.status, report.at, { code: report.error_code, message: report.error_message, details: report.error_details });
        this.statuses.inc({ status: report.status, outcome: 'replayed' });
      }
    }
    await this.write(tx, moves);
  }

  /** `outbox.entry.failed` (and a resolution as rejected): terminal failure, enqueue or delivery. */
  async failed(tx: Tx, organizationId: string, data: OutboxEntryEventData): Promise<void> {
    await this.statusBatch.flush(tx);
    const message = await this.messageOf(tx, organizationId, data);
    if (!message) return;
    // Refused at enqueue (nothing was ever queued at the dispatcher) versus queued but undeliverable.
    const stage = !data.attempts && !data.classification && data.error_code && ENQUEUE_ERROR_CODES.has(data.error_code) ? 'enqueue' : 'delivery';
    const moves = new Moves();
    this.move(moves, message, 'failed', this.clock.now(), { code: data.error_code ?? data.classification ?? null, message: data.error_message ?? null, subcode: data.error_subcode ?? null, details: data.error_details ?? null }, stage);
    await this.write(tx, moves);
  }

  /**
   * `outbox.entry.cancelled`: cancelled before it was claimed, by key or because its address was
   * suppressed (then the message, its notification delivery and the requester's event carry the
   * code `suppressed`).
   */
  async cancelled(tx: Tx, organizationId: string, data: OutboxEntryEventData): Promise<void> {
    await this.statusBatch.flush(tx);
    const message = await this.messageOf(tx, organizationId, data);
    if (!message) return;
    const moves = new Moves();
    this.move(moves, message, 'cancelled', this.clock.now(), { code: data.reason === 'suppressed' ? 'suppressed' : null });
    await this.write(tx, moves);
  }

  /**
   * `outbox.entry.ambiguous`: the dispatcher does not know whether the send left and never retries
   * it; the message shows `ambiguous` with the entry id an operator resolves (`/outbox/ambiguous`),
   * until `outbox.entry.resolved` (or a provider status) moves it on.
   */
  async ambiguous(tx: Tx, organizationId: string, data: OutboxEntryEventData): Promise<void> {
    await this.statusBatch.flush(tx);
    const message = await this.messageOf(tx, organizationId, data);
    if (!message) return;
    this.logger.warn({ event: 'messaging.send_ambiguous', organization_id: organizationId, message_id: message.id, entry_id: data.entry_id }, 'send outcome unknown; waiting for correlation');
    if (data.entry_id && !message.outbox_entry_id) {
      await this.messages.setOutboxEntry(tx, message.id, data.entry_id);
      message.outbox_entry_id = data.entry_id;
    }
    const moves = new Moves();
    this.move(moves, message, 'ambiguous', this.clock.now(), {});
    await this.write(tx, moves);
    await this.stream.append(tx, organizationId, 'messaging.message.ambiguous', { message_id: message.id, conversation_id: message.conversation_id, entry_id: data.entry_id });
  }

  /**
   * A provider delivery status for `report.external_id`, applied at once (see `applyStatuses`).
   * @param messageHint the message id from the entry's log context, when the event carries it
   */
  async status(tx: Tx, report: StatusReport, messageHint?: string | null): Promise<StatusOutcome> {
    await this.statusBatch.flush(tx);
    const [outcome] = await this.applyStatuses(tx, [{ report, hint: messageHint ?? null }]);
    return outcome;
  }

  /**
   * A provider delivery status, applied with the other statuses of the transaction right before it
   * commits (a consumer batch of `outbox.provider_status.recorded` becomes one lookup and one
   * update); the entry outcomes handled in the same transaction apply the ones before them first,
   * so the order of arrival is the order of effect.
   */
  statusLater(tx: Tx, report: StatusReport, messageHint: string | null): void {
    this.statusBatch.add(tx, { report, hint: messageHint });
  }

  /**
   * Provider delivery statuses, in order: each applied forward-only to the message that has its
   * provider id, or kept in `pending_statuses` when no message has it yet. The messages known by
   * their provider ids are locked in one statement and their moves written in one; a status whose
   * id no message has yet takes the slower path of `findLate`.
   * @returns for each status, whether it moved its message (applied), did not (ignored) or was kept (pending)
   */
  async applyStatuses(tx: Tx, items: StatusItem[]): Promise<StatusOutcome[]> {
    // Every message the batch names, by provider id or by hint, locked in one order (two status
    // batches of the same messages locked them in arrival order and deadlocked).
    const locked = await this.messages.lockForStatuses(
      tx,
      items.map((i) => i.report),
      items.flatMap((i) => (i.hint ? [i.hint] : [])),
    );
    const byKey = new Map(locked.filter((m) => m.external_id).map((m) => [providerKey(m.organization_id, m.channel, m.external_id!), m]));
    const byId = new Map(locked.map((m) => [m.id, m]));
    const moves = new Moves();
    const outcomes: StatusOutcome[] = [];
    for (const { report, hint } of items) {
      const key = providerKey(report.organization_id, report.channel, report.external_id);
      let message = byKey.get(key) ?? this.adoptHinted(hint ? byId.get(hint) : undefined, report, moves) ?? (await this.findLate(tx, report, hint, byId, moves));
      if (message && message.organization_id !== report.organization_id) message = null;
      if (!message) {
        await this.messages.addPendingStatus(tx, report, this.clock.now());
        this.statuses.inc({ status: report.status, outcome: 'pending' });
        outcomes.push('pending');
        continue;
      }
      byKey.set(key, message);
      const moved = this.move(moves, message, report.status, report.at, { code: report.error_code, message: report.error_message, details: report.error_details });
      this.statuses.inc({ status: report.status, outcome: moved ? 'applied' : 'ignored' });
      outcomes.push(moved ? 'applied' : 'ignored');
    }
    await this.write(tx, moves);
    return outcomes;
  }

  /**
   * `message`, the one a status's request hints at, as that status's message: null when it is
   * another organization's or channel's, or already has another provider id; else it is, and takes
   * this provider id if it had none. In `applyStatuses` the batch's lookup locked it, which orders it
   * after an acceptance holding it (whose id the lookup then read committed); an acceptance that
   * comes later finds the id set.
   */
  private adoptHinted(message: MessageRow | null | undefined, report: StatusReport, moves: Moves): MessageRow | null {
    if (!message || message.organization_id !== report.organization_id || message.channel !== report.channel) return null;
    if (message.external_id && message.external_id !== report.external_id) return null;
    if (!message.external_id) {
      message.external_id = report.external_id;
      moves.touch(message);
    }
    return message;
  }

  /**
   * The message of a status whose provider id no message had in the batch's lookup, or null.
   *
   * A status racing the acceptance that sets this id (READ COMMITTED): the lookup cannot see the
   * acceptance's uncommitted id, and the acceptance's take of pending statuses cannot see this
   * uncommitted pending row, so both would commit and the status would stay pending for good. The
   * acceptance holds the provider id's lock from before it sets the id until it commits, so the
   * lookup again here, under that lock, runs after that commit (and finds the message), or the
   * acceptance takes the pending row after this commits. A message found by the first lookup has
   * its id committed already, so it needs no such lock: its row lock orders the statuses.
   */
  private async findLate(tx: Tx, report: StatusReport, hint: string | null, byId: Map<string, MessageRow>, moves: Moves): Promise<MessageRow | null> {
    await this.messages.lockProviderId(tx, report.organization_id, report.external_id);
    const found = await this.messages.findByExternalId(tx, report.organization_id, report.channel, report.external_id, true);
    if (found) return remember(byId, found);
    if (!hint) return null;
    // The locked re-read may carry this very id, set by an acceptance committed meanwhile: it is the message.
    const hinted = this.adoptHinted(byId.get(hint) ?? (await this.messages.findById(tx, report.organization_id, hint, true)), report, moves);
    return hinted ? remember(byId, hinted) : null;
  }

  /**
   * Moves a locked message by one report in memory, forward only (`nextStatus`), stamping the
   * report's time even when the status itself stays; the requester's events, the feed items and the
   * notification delivery to settle go with it. `write` stores what the moves changed.
   * @returns whether the status moved
   */
  private move(moves: Moves, message: MessageRow, reported: string, at: Date, error: MoveError, stage: 'enqueue' | 'delivery' = 'delivery'): boolean {
    if (message.direction !== 'outbound') return false;
    const to = nextStatus(message.status, reported);
    // The stamps of statuses that arrive late (a `delivered` after `read`) are still kept, once.
    const stamped = stamp(message, reported, at);
    if (stamped) moves.touch(message);
    if (!to) return false;
    const from = message.status;
    message.status = to;
    moves.touch(message, to === 'failed' || to === 'cancelled' ? { terminal: to, terminal_at: at, error_code: error.code ?? null, error_message: error.message ?? null, error_subcode: error.subcode ?? null, error_details: error.details ?? null } : undefined);
    if (to === 'failed' || to === 'cancelled') {
      message.error_code = error.code ?? null;
      if (to === 'failed') message.failed_at = at;
    }
    const changed: MessageStatusChangedData = {
      message_id: message.id,
      conversation_id: message.conversation_id,
      contact_id: message.contact_id,
      channel: message.channel,
      from,
      to,
      provider_message_id: message.external_id,
    };
    moves.feed.push({ organization_id: message.organization_id, type: MessagingEvents.MessageStatusChanged, data: changed });

    if ((from === 'queued' || from === 'ambiguous') && (to === 'sent' || to === 'delivered' || to === 'read')) {
      moves.events.push({ event_id: `messaging.message.sent:${message.id}`, type: MessagingEvents.MessageSent, organization_id: message.organization_id, data: outcomeData(message, 'sent') });
      moves.settle.push({ message, status: 'sent', code: null });
    }
    if (to === 'delivered' || to === 'read') {
      // For requesters that act on it (a follow-up's "only if not read"); a message reaches each once.
      moves.events.push({
        event_id: `messaging.message.${to}:${message.id}`,
        type: to === 'delivered' ? MessagingEvents.MessageDelivered : MessagingEvents.MessageRead,
        organization_id: message.organization_id,
        data: { ...outcomeData(message, to), status_at: at.toISOString() },
      });
    } else if (to === 'failed') {
      moves.events.push({
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
      moves.settle.push({ message, status: 'failed', code: error.code ?? 'failed' });
    } else if (to === 'cancelled') {
      moves.events.push({
        event_id: `messaging.message.cancelled:${message.id}`,
        type: MessagingEvents.MessageCancelled,
        organization_id: message.organization_id,
        data: { ...outcomeData(message, 'cancelled'), error_code: error.code ?? null },
      });
      moves.settle.push({ message, status: 'failed', code: error.code ?? 'cancelled' });
    }
    return true;
  }

  /** Stores what `move` changed: the rows in one statement, the events in one, the feed items with the transaction's others. */
  private async write(tx: Tx, moves: Moves): Promise<void> {
    await this.messages.saveStatuses(
      tx,
      [...moves.rows.values()].map(({ message, terminal }) => ({ id: message.id, status: message.status, external_id: message.external_id, sent_at: message.sent_at, delivered_at: message.delivered_at, read_at: message.read_at, ...terminal })),
    );
    for (const item of moves.feed) await this.stream.append(tx, item.organization_id, item.type, item.data);
    if (moves.events.length) await tx.publish(moves.events);
    for (const s of moves.settle) await this.settleDelivery(tx, s.message, s.status, s.code);
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
