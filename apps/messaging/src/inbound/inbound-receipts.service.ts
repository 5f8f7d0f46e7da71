import { Inject, Injectable } from '@nestjs/common';
import { type InboundAcknowledgedData, MessagingEvents, type WhatsAppInboundBatch } from '@touchpoint/contracts';
import { outboxCommitted, poolOf, type Queryable } from '@touchpoint/database';
import { AppError, ErrorCode } from '@touchpoint/errors';
import type { Logger } from '@touchpoint/observability';
import { toPhoneKey } from '@touchpoint/phone';
import { LOGGER, UnitOfWork } from '@touchpoint/runtime';
import { judgeInbound, truncateText } from '@touchpoint/text';
import { Clock } from '@touchpoint/time';
import { ConversationsRepository } from '../conversations/conversations.repository.js';
import { MessagesRepository } from '../messages/messages.repository.js';
import { SendersService } from '../senders/senders.service.js';
import { type InboundReceiptRow, InboundReceiptsRepository, type NewInboundReceipt, type ReceiptEvent } from './inbound-receipts.repository.js';
import { InboundMetrics } from './inbound.metrics.js';
import { InboundOptOutService } from './inbound-opt-out.service.js';
import { type AdmittedMessage, InboundService, type ReceiptHints, type SenderLane } from './inbound.service.js';
import { InboundBatchRepository } from './inbound-batch.repository.js';
import { parseWhatsAppMessage, unusableWhatsAppMessage } from './whatsapp-message.js';

/** Profile names by wa_id from a change's `contacts` (any other shape: none). */
export function contactNames(contacts: unknown): Map<string, string | null> {
  const names = new Map<string, string | null>();
  if (!Array.isArray(contacts)) return names;
  for (const c of contacts as { wa_id?: unknown; profile?: { name?: unknown } }[]) {
    if (c && typeof c.wa_id === 'string') names.set(c.wa_id, typeof c.profile?.name === 'string' ? c.profile.name : null);
  }
  return names;
}

/**
 * The `messaging.inbound.acknowledged` each receipt would publish, grouped by person: the
 * repository writes, per person, only the one of that person's first NEW receipt (so a redelivered
 * webhook publishes nothing and a duplicate delivery is dropped by the dispatcher's inbox). The
 * dispatcher holds that person's queued follow-ups and outreach sends until the requester, which
 * judges whether it is a reply, has had time to cancel them (`OUTBOX_REPLY_HOLD_MS`); nothing is
 * judged here (a `system` message, Meta's own, holds nothing).
 */
export function replyHolds(receipts: NewInboundReceipt[], acknowledgedAt: Date = new Date()): ReceiptEvent[] {
  const holds: ReceiptEvent[] = [];
  for (const r of receipts) {
    // A `system` message is Meta writing about the user (a changed number), never the person.
    if ((r.message as { type?: unknown }).type === 'system') continue;
    const from = String((r.message as { from?: unknown }).from ?? '');
    if (!from) continue;
    const data: InboundAcknowledgedData = { channel: 'whatsapp', from, sender_id: r.sender_id, acknowledged_at: acknowledgedAt.toISOString() };
    holds.push({
      external_id: r.external_id,
      group: `${r.organization_id}|${toPhoneKey(from) ?? from}`,
      message: { event_id: `${MessagingEvents.InboundAcknowledged}:${r.organization_id}:${r.channel}:${r.external_id}`, type: MessagingEvents.InboundAcknowledged, organization_id: r.organization_id, data },
    });
  }
  return holds;
}

/** What `accept` did with the messages of one webhook change. */
export interface AcceptResult {
  /** New receipts stored (acknowledged; the worker makes them messages). */
  accepted: number;
  /** Provider ids already waiting as receipts. */
  duplicates: number;
  ignored: number;
}

/**
 * Receipt acceptance (seed 004 "Scenario 2"): a WhatsApp webhook change becomes
 * inbound receipts, one insert, before the gateway answers (`accept`), and the receipt worker's
 * claimed batches go to the message pipeline (`hintsFor`, `processReceipt`, `InboundService`).
 */
@Injectable()
export class InboundReceiptsService {
  private readonly acceptedListeners: (() => void)[] = [];
  /** Plain reads outside a transaction (one round trip, any pool connection). */
  /** Reads that need no transaction run on the pool. */
  private get reader(): Queryable {
    return poolOf(this.uow.dataSource);
  }

  constructor(
    private readonly uow: UnitOfWork,
    private readonly inbound: InboundService,
    private readonly optOut: InboundOptOutService,
    private readonly senders: SendersService,
    private readonly receipts: InboundReceiptsRepository,
    private readonly batch: InboundBatchRepository,
    private readonly messages: MessagesRepository,
    private readonly conversations: ConversationsRepository,
    private readonly metrics: InboundMetrics,
    private readonly clock: Clock,
    @Inject(LOGGER) private readonly logger: Logger,
  ) {}

  /**
   * The `messaging.inbound.whatsapp` RPC (the gateway's Meta ingress): stores each message of one
   * webhook change as an inbound receipt, in one statement, and answers; the receipt worker does
   * the rest (`processReceipt`). So the gateway's 2xx means "durably stored", and a failure after
   * that point (abuse unreachable with nothing in the read model, a lost database) is retried here
   * rather than by Meta. A message without an id or a sender, or from a number that is not a
   * phone, is ignored (a redelivery would not change it). In the same statement, one
   * `messaging.inbound.acknowledged` per person tells the dispatcher to hold that person's
   * stop-on-reply sends (`replyHolds`): one statement writes both (no BEGIN/COMMIT round trips).
   * @throws AppError service_unavailable when the receipts could not be stored or the owner of the number not learned (→ 503, Meta redelivers)
   */
  async accept(batch: WhatsAppInboundBatch & { organization_id?: string }): Promise<AcceptResult> {
    const result: AcceptResult = { accepted: 0, duplicates: 0, ignored: 0 };
    const owner = await this.ownerOf(batch, result);
    if (!owner) return result;
    const names = contactNames(batch.contacts);
    const receipts: NewInboundReceipt[] = [];
    for (const raw of batch.messages) {
      const problem = unusableWhatsAppMessage(raw) ?? (toPhoneKey(raw.from) ? null : 'sender is not a phone');
      if (problem) {
        this.logger.warn({ event: 'messaging.inbound_malformed', organization_id: owner.organization_id, external_id: typeof raw?.id === 'string' ? truncateText(raw.id, 100) : undefined, reason: problem }, 'unusable inbound message ignored');
        result.ignored++;
        continue;
      }
      receipts.push({ organization_id: owner.organization_id, channel: 'whatsapp', external_id: raw.id, sender_id: owner.sender_id, contact_name: names.get(raw.from) ?? null, message: raw });
    }
    try {
      // The receipts and their hold events (`replyHolds`) commit together, in one statement: no
      // acknowledgement without the dispatcher being told, and no hold for a message not stored.
      const now = this.clock.now();
      const { inserted: fresh, published } = await this.receipts.insert(receipts, replyHolds(receipts, now), now);
      if (published) outboxCommitted(this.uow.dataSource, this.uow.schema);
      result.accepted = fresh.size;
      result.duplicates = receipts.length - fresh.size;
    } catch (err) {
      this.logger.error({ event: 'messaging.inbound_receipt_failed', organization_id: owner.organization_id, count: receipts.length, err: (err as Error).message }, 'inbound receipts not stored');
      throw new AppError(ErrorCode.ServiceUnavailable, 'the message could not be stored; retry');
    }
    this.metrics.received.inc({ channel: 'whatsapp', outcome: 'accepted' }, result.accepted);
    if (result.duplicates) this.metrics.received.inc({ channel: 'whatsapp', outcome: 'duplicate' }, result.duplicates);
    if (result.accepted) for (const listener of this.acceptedListeners) listener();
    // The receipt worker applies the opt-out to the contact (every address, followups, outreach)
    // later, behind whatever is waiting; the number it came from is suppressed before we answer.
    // All at once: each may wait for a send already on the wire to it (`outbox.suppressions.add`),
    // and one after another those waits added up past the gateway's deadline for the whole batch.
    const optOuts = receipts.map((r) => parseWhatsAppMessage(r.message as WhatsAppInboundBatch['messages'][number])).filter((parsed) => judgeInbound({ channel: 'whatsapp', text: parsed.text, textMayOptOut: parsed.typedText }).optOut);
    const settled = await Promise.allSettled(optOuts.map((parsed) => this.optOut.optOutNow(owner.organization_id, 'whatsapp', parsed.from)));
    const failed = settled.find((s): s is PromiseRejectedResult => s.status === 'rejected');
    if (failed) throw failed.reason;
    return result;
  }

  /** Registers what runs after `accept` stored new receipts (the worker's wake-up). */
  onAccepted(listener: () => void): void {
    this.acceptedListeners.push(listener);
  }

  /**
   * Processes one inbound receipt through the whole pipeline (`InboundService.takeWhatsApp`).
   * @throws AppError service_unavailable (or the pipeline's own code) when it could not be stored or judged; the worker retries
   */
  async processReceipt(r: InboundReceiptRow, hints: ReceiptHints = {}): Promise<'stored' | 'duplicate' | 'denied' | 'ignored'> {
    if (r.channel !== 'whatsapp') throw new AppError(ErrorCode.Internal, `no receipt processing for channel ${r.channel}`);
    return this.inbound.takeWhatsApp(r.message as unknown as WhatsAppInboundBatch['messages'][number], r.organization_id, r.sender_id, r.contact_name, hints);
  }

  /**
   * The receipt worker's judgement of one receipt (`InboundService.admitWhatsApp`): an outcome, or
   * the admitted message for `commit`.
   * @throws AppError service_unavailable (or the pipeline's own code) when it could not be judged; the worker retries
   */
  async admit(r: InboundReceiptRow, known: boolean, lane: SenderLane): Promise<'stored' | 'duplicate' | 'denied' | 'ignored' | AdmittedMessage> {
    if (r.channel !== 'whatsapp') throw new AppError(ErrorCode.Internal, `no receipt processing for channel ${r.channel}`);
    return this.inbound.admitWhatsApp(r.message as unknown as WhatsAppInboundBatch['messages'][number], r.organization_id, r.sender_id, r.contact_name, known, lane);
  }

  /**
   * Stores admitted messages (`InboundService.storeAdmitted`) and deletes the receipts `done` in one
   * transaction: a receipt is gone if and only if its message (or its denial) is the record.
   */
  async commit(admitted: AdmittedMessage[], done: string[]): Promise<void> {
    if (admitted.length === 0 && done.length === 0) return;
    await this.uow.run(async (tx) => {
      await this.inbound.storeAdmitted(tx, admitted);
      await this.batch.removeReceipts(tx, done);
    });
  }

  /** Stores one admitted message on its own transaction (`InboundService.storeOne`). */
  storeOne(admitted: AdmittedMessage): Promise<boolean> {
    return this.inbound.storeOne(admitted);
  }

  /**
   * What two queries tell about a whole batch of receipts, instead of two per message: which
   * provider ids are stored already, and the contact, conversation and active instance of each
   * sender's first receipt in the batch (the worker's lane carries it on to the sender's later ones).
   * @param batch receipts in arrival order
   * @returns hints by receipt id, for `processReceipt`
   */
  async hintsFor(batch: InboundReceiptRow[]): Promise<Map<string, ReceiptHints>> {
    const hints = new Map<string, ReceiptHints>();
    if (batch.length === 0) return hints;
    const storedIds = await this.messages.storedWhatsAppIds(this.reader, batch);
    const firstOfSender = new Map<string, InboundReceiptRow>();
    for (const r of batch) {
      const key = toPhoneKey(String(r.message.from ?? ''));
      if (key && !firstOfSender.has(`${r.organization_id}|${key}`)) firstOfSender.set(`${r.organization_id}|${key}`, r);
    }
    const entries = [...firstOfSender.keys()].map((k) => k.split('|') as [string, string]);
    const openBySender = await this.conversations.findOpenWhatsAppThreads(this.reader, entries);
    for (const r of batch) hints.set(r.id, { known: storedIds.has(`${r.organization_id}|${r.external_id}`) });
    for (const [sender, r] of firstOfSender) hints.get(r.id)!.open = openBySender.get(sender) ?? null;
    return hints;
  }

  /**
   * Opens, in one transaction (`InboundService.openThreads`), the thread of each sender of the
   * batch that has none yet (its first receipt's hint is null) and something to store: its
   * first receipt then carries the new thread. A sender whose receipts include a `system` message
   * is left to the pipeline (the number may change under it). When the batch open fails, the
   * hints stay and each sender's first message opens its own thread, as before.
   * @param queues each sender's receipts, in arrival order
   */
  async openNewSenders(queues: InboundReceiptRow[][], hints: Map<string, ReceiptHints>): Promise<void> {
    const wanted: { organization_id: string; phone_key: string; name: string | null; first: string }[] = [];
    for (const queue of queues) {
      const first = hints.get(queue[0]!.id);
      if (!first || first.open !== null || queue.some((r) => r.message.type === 'system')) continue;
      const fresh = queue.find((r) => !hints.get(r.id)?.known);
      const key = fresh ? toPhoneKey(String(fresh.message.from ?? '')) : null;
      if (fresh && key) wanted.push({ organization_id: fresh.organization_id, phone_key: key, name: fresh.contact_name, first: queue[0]!.id });
    }
    if (wanted.length === 0) return;
    try {
      const threads = await this.inbound.openThreads(wanted);
      for (const w of wanted) {
        const thread = threads.get(`${w.organization_id}|${w.phone_key}`);
        if (thread) hints.get(w.first)!.open = thread;
      }
    } catch (err) {
      this.logger.warn({ event: 'messaging.inbound_open_batch_failed', count: wanted.length, err: (err as Error).message }, "new senders' threads not opened at once; each opens its own");
    }
  }

  /** The organization and sender owning the batch's number, or null (counted ignored) when nobody does. */
  async ownerOf(batch: (WhatsAppInboundBatch & { organization_id?: string }) | null | undefined, result: { ignored: number }): Promise<{ organization_id: string; sender_id: string | null } | null> {
    if (!batch || !Array.isArray(batch.messages) || batch.messages.length === 0) return null;
    const owner = batch.organization_id ? { organization_id: batch.organization_id, sender_id: null as string | null } : batch.phone_number_id ? await this.senders.resolve(batch.phone_number_id) : null;
    if (!owner?.organization_id) {
      // Nobody owns this number here: storing is impossible and a redelivery will not change that.
      this.logger.warn({ event: 'messaging.inbound_unknown_number', phone_number_id: batch.phone_number_id, count: batch.messages.length }, 'inbound for an unregistered number ignored');
      result.ignored = batch.messages.length;
      this.metrics.received.inc({ channel: 'whatsapp', outcome: 'ignored' }, batch.messages.length);
      return null;
    }
    return owner;
  }
}
