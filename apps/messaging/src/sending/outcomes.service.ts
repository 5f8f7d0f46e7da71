import { Inject, Injectable } from '@nestjs/common';
import { Counter } from 'prom-client';
import { type MessageStatusChangedData, MessagingEvents, type NotificationDeliveryUpdatedData, type OutboxEntryEventData, OutboxEnqueueErrorCode, OutboxEvents, type OutgoingMessage } from '@touchpoint/contracts';
import { CommitBatch, type Tx } from '@touchpoint/database';
import { type Logger, METRIC_PREFIX, Metrics } from '@touchpoint/observability';
import { LOGGER } from '@touchpoint/runtime';
import { Clock } from '@touchpoint/time';
import { nextStatus } from '../messages/message-status.js';
import { type MessageRow, MessagesRepository, type PendingStatus, type SavedStatus, type StatusReport } from '../messages/messages.repository.js';
import { NotificationsRepository } from '../notifications/notifications.repository.js';
import { StreamRepository } from '../stream/stream.repository.js';
import { failedSendLevel, outcomeData } from './send.service.js';

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

/** What the moves of one handler (or one batch of statuses, or of entry outcomes) changed, for `write` to store together. */
class Moves {
  /** Locked message rows that changed, by id, with the failed/cancelled move made, if any. */
  readonly rows = new Map<string, { message: MessageRow; terminal?: Partial<SavedStatus> }>();
  readonly events: OutgoingMessage[] = [];
  readonly feed: { organization_id: string; type: string; data: object }[] = [];
  readonly settle: { message: MessageRow; status: 'sent' | 'failed'; code: string | null }[] = [];
  /** Kept statuses applied from what `lockForOutcomes` read, to delete with the moves. */
  readonly appliedPending: string[] = [];

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

/**
 * The entry outcomes of one transaction: their messages, locked and read, with the statuses kept
 * for the provider ids their acceptances give them, and the moves to store. In a consumer batch
 * (`deferred`) the moves of every handler are stored together right before the commit; a handler
 * on its own stores its moves as it ends.
 */
interface OutcomeBatch {
  rows: Map<string, MessageRow>;
  /** By message id: the provider id the statuses were read for, and those not applied yet. */
  pending: Map<string, { externalId: string; reports: PendingStatus[] }>;
  moves: Moves;
  deferred: boolean;
}

/** An entry outcome as a handler gets it. */
export interface EntryOutcome {
  organizationId: string;
  type: string;
  data: OutboxEntryEventData;
}

/** Whether an outcome accepts its message (it takes the message's kept statuses). */
const accepts = (o: EntryOutcome) => o.type === OutboxEvents.EntryAccepted || (o.type === OutboxEvents.EntryResolved && o.data?.resolution !== 'rejected');

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
  private readonly outcomeBatches = new WeakMap<Tx, OutcomeBatch>();

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

  /**
   * Takes, for a consumer batch of entry outcomes, the locks its handlers need, in one order, and
   * reads their messages: the accepted provider ids' advisory locks (one statement), then the
   * messages' rows in id order with the statuses kept for those ids (one statement). Locked in
   * arrival order, an acceptance batch and a status batch (which locks its rows in id order)
   * deadlocked on each other's messages. The handlers then move the rows read here, and their moves
   * are stored together right before the commit (an acceptance of N messages was 2 + 5N statements).
   */
  async lockOutcomeBatch(tx: Tx, outcomes: EntryOutcome[]): Promise<void> {
    await this.flushOutcomes(tx);
    await this.load(tx, outcomes, true);
  }

  /** Locks and reads the messages of `outcomes` (see `lockOutcomeBatch`); a `deferred` batch is the transaction's until its commit. */
  private async load(tx: Tx, outcomes: EntryOutcome[], deferred: boolean): Promise<OutcomeBatch> {
    // The provider id's lock before the row lock (the order `findLate` takes them in): see there for why.
    const locking = outcomes.filter((o) => accepts(o) && o.data?.provider_message_id);
    await this.messages.lockProviderIds(
      tx,
      locking.map((o) => o.organizationId),
      locking.map((o) => o.data.provider_message_id!),
    );
    const named = outcomes.flatMap((o) => {
      const id = o.data?.log_context?.message_id;
      return typeof id === 'string' ? [{ id, provider_id: o.data.provider_message_id ?? null, take: accepts(o) }] : [];
    });
    const batch: OutcomeBatch = { rows: new Map(), pending: new Map(), moves: new Moves(), deferred };
    for (const { message, pendingFor, pending } of await this.messages.lockForOutcomes(tx, named)) {
      batch.rows.set(message.id, message);
      if (pendingFor) batch.pending.set(message.id, { externalId: pendingFor, reports: pending });
    }
    if (deferred) {
      this.outcomeBatches.set(tx, batch);
      tx.beforeCommit(() => this.flushOutcomes(tx));
    }
    return batch;
  }

  /** The transaction's batch of entry outcomes, or (a handler on its own: one message, the outcome sweep) this outcome's own. */
  private async batchOf(tx: Tx, outcome: EntryOutcome): Promise<OutcomeBatch> {
    await this.statusBatch.flush(tx);
    return this.outcomeBatches.get(tx) ?? this.load(tx, [outcome], false);
  }

  /** Stores the moves of a batch that is not deferred (a handler on its own ends here). */
  private async done(tx: Tx, batch: OutcomeBatch): Promise<void> {
    if (!batch.deferred) await this.write(tx, batch.moves);
  }

  /** Stores the deferred moves of the transaction's batch now, and forgets the batch (a later handler reads its rows again). */
  private async flushOutcomes(tx: Tx): Promise<void> {
    const batch = this.outcomeBatches.get(tx);
    if (!batch) return;
    this.outcomeBatches.delete(tx);
    await this.write(tx, batch.moves);
  }

  /** The locked message an entry event is about: by the log context's message id (read by the batch), else by the key. */
  private async messageOf(tx: Tx, batch: OutcomeBatch, organizationId: string, data: OutboxEntryEventData): Promise<MessageRow | null> {
    const id = data.log_context?.message_id;
    const read = typeof id === 'string' ? batch.rows.get(id) : undefined;
    if (read && read.organization_id === organizationId) return read;
    const found = data.idempotency_key ? await this.messages.findByIdempotencyKey(tx, organizationId, data.idempotency_key, true) : null;
    return found ? remember(batch.rows, found) : null;
  }

  /** The kept statuses of a locked message's provider id: those the batch read (once), else taken now. */
  private async pendingOf(tx: Tx, batch: OutcomeBatch, message: MessageRow): Promise<StatusReport[]> {
    const read = batch.pending.get(message.id);
    if (read && read.externalId === message.external_id) {
      const reports = read.reports;
      read.reports = [];
      batch.moves.appliedPending.push(...reports.map((r) => r.id));
      return reports;
    }
    return this.messages.takePendingStatuses(tx, message.organization_id, message.channel, message.external_id!);
  }

  /** `outbox.entry.accepted` (and a resolution as accepted): the provider id is known, the message is sent. */
  async accepted(tx: Tx, organizationId: string, data: OutboxEntryEventData): Promise<void> {
    const batch = await this.batchOf(tx, { organizationId, type: OutboxEvents.EntryAccepted, data });
    const message = await this.messageOf(tx, batch, organizationId, data);
    if (!message) return; // read receipts and sends that are not messages have no row
    const moves = batch.moves;
    if (data.provider_message_id && !message.external_id) {
      message.external_id = data.provider_message_id;
      moves.touch(message);
    }
    this.move(moves, message, 'sent', this.clock.now(), {});
    if (message.external_id) {
      for (const report of await this.pendingOf(tx, batch, message)) {
        this.move(moves, message, report.status, report.at, { code: report.error_code, message: report.error_message, details: report.error_details });
        this.statuses.inc({ status: report.status, outcome: 'replayed' });
      }
    }
    await this.done(tx, batch);
  }

  /** `outbox.entry.failed` (and a resolution as rejected): terminal failure, enqueue or delivery. */
  async failed(tx: Tx, organizationId: string, data: OutboxEntryEventData): Promise<void> {
    const batch = await this.batchOf(tx, { organizationId, type: OutboxEvents.EntryFailed, data });
    const message = await this.messageOf(tx, batch, organizationId, data);
    if (!message) return;
    // Refused at enqueue (nothing was ever queued at the dispatcher) versus queued but undeliverable.
    const stage = !data.attempts && !data.classification && data.error_code && ENQUEUE_ERROR_CODES.has(data.error_code) ? 'enqueue' : 'delivery';
    this.move(batch.moves, message, 'failed', this.clock.now(), { code: data.error_code ?? data.classification ?? null, message: data.error_message ?? null, subcode: data.error_subcode ?? null, details: data.error_details ?? null }, stage);
    await this.done(tx, batch);
  }

  /**
   * `outbox.entry.cancelled`: cancelled before it was claimed, by key or because its address was
   * suppressed (then the message, its notification delivery and the requester's event carry the
   * code `suppressed`).
   */
  async cancelled(tx: Tx, organizationId: string, data: OutboxEntryEventData): Promise<void> {
    const batch = await this.batchOf(tx, { organizationId, type: OutboxEvents.EntryCancelled, data });
    const message = await this.messageOf(tx, batch, organizationId, data);
    if (!message) return;
    this.move(batch.moves, message, 'cancelled', this.clock.now(), { code: data.reason === 'suppressed' ? 'suppressed' : null });
    await this.done(tx, batch);
  }

  /**
   * `outbox.entry.ambiguous`: the dispatcher does not know whether the send left and never retries
   * it; the message shows `ambiguous` with the entry id an operator resolves (`/outbox/ambiguous`),
   * until `outbox.entry.resolved` (or a provider status) moves it on.
   */
  async ambiguous(tx: Tx, organizationId: string, data: OutboxEntryEventData): Promise<void> {
    const batch = await this.batchOf(tx, { organizationId, type: OutboxEvents.EntryAmbiguous, data });
    const message = await this.messageOf(tx, batch, organizationId, data);
    if (!message) return;
    this.logger.warn({ event: 'messaging.send_ambiguous', organization_id: organizationId, message_id: message.id, entry_id: data.entry_id }, 'send outcome unknown; waiting for correlation');
    if (data.entry_id && !message.outbox_entry_id) {
      await this.messages.setOutboxEntry(tx, message.id, data.entry_id);
      message.outbox_entry_id = data.entry_id;
    }
    this.move(batch.moves, message, 'ambiguous', this.clock.now(), {});
    // With the moves, so the feed keeps its order (the status change first) in a deferred batch too.
    batch.moves.feed.push({ organization_id: organizationId, type: 'messaging.message.ambiguous', data: { message_id: message.id, conversation_id: message.conversation_id, entry_id: data.entry_id } });
    await this.done(tx, batch);
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
    // It reads its messages from the database: the entry outcomes moved before it are stored first.
    await this.flushOutcomes(tx);
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
      // A refusal by policy is the platform doing its job, not a fault to page anyone about.
      this.logger[failedSendLevel(error.code)](
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
    await this.messages.deletePendingStatuses(tx, moves.appliedPending);
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
