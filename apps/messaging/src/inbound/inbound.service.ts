import { Inject, Injectable } from '@nestjs/common';
import {
  type AbuseCheckData,
  type InboundAcknowledgedData,
  type InboundDeniedData,
  type MessageReceivedData,
  MessagingEvents,
  type MessagingChannel,
  type OutgoingMessage,
  OutboxCommands,
  type OutboxEnqueueData,
  type WhatsAppInboundBatch,
  type SuppressionRequestedData,
} from '@touchpoint/contracts';
import { poolOf, type Queryable, type Tx } from '@touchpoint/database';
import { AppError, ErrorCode } from '@touchpoint/errors';
import type { Logger } from '@touchpoint/observability';
import { toPhoneKey } from '@touchpoint/phone';
import { APP_CONFIG, LOGGER, UnitOfWork } from '@touchpoint/runtime';
import { type InboundJudgement, judgeInbound } from '@touchpoint/text';
import { Clock } from '@touchpoint/time';
import type { ContactRow } from '../contacts/contacts.repository.js';
import { ContactsRepository } from '../contacts/contacts.repository.js';
import { ContactsService, contactCreated } from '../contacts/contacts.service.js';
import { type ConversationRow, ConversationsRepository, type InstanceRow, type OpenThread } from '../conversations/conversations.repository.js';
import { instanceData, InstancesService } from '../conversations/instances.service.js';
import { type MessageRow, MessagesRepository, type NewAttachment, toMessageView } from '../messages/messages.repository.js';
import type { MessagingConfig } from '../messaging.config.js';
import { AbuseGuardService, type GuardVerdict } from '../restrictions/abuse-guard.service.js';
import { SendService } from '../sending/send.service.js';
import { StreamRepository } from '../stream/stream.repository.js';
import { InboundBatchRepository } from './inbound-batch.repository.js';
import { InboundMetrics } from './inbound.metrics.js';
import { parseWhatsAppMessage, type ParsedWhatsAppMessage } from './whatsapp-message.js';

/** How many rollovers one message may go through before it is stored anyway (a cap of 0 would loop). */
const MAX_ROLLOVERS_PER_MESSAGE = 3;

/**
 * What the receipt worker already knows about one receipt (`InboundReceiptsService.hintsFor`): `known` — its
 * provider id is stored; `open` — the sender's contact, conversation and active instance (null: none
 * yet). An absent field is read by the pipeline itself.
 */
export interface ReceiptHints {
  known?: boolean;
  open?: { contact: ContactRow; conversation: ConversationRow; instance: InstanceRow } | null;
}

/** A message `admitWhatsApp` judged and admitted, waiting for its batch's `storeAdmitted`. */
export interface AdmittedMessage {
  m: InboundMessage;
  contact: ContactRow;
  conversation: ConversationRow;
  /** Abuse's verdict (its action decides the warning reply). */
  verdict: GuardVerdict | null;
}

/**
 * One sender's state through a receipt batch (`admitWhatsApp`): `open` — its contact, conversation
 * and active instance (null: none yet; undefined: not read); `admitted` — messages admitted on that
 * instance and not stored yet; `flush` — stores them now.
 */
export interface SenderLane {
  open: OpenThread | null | undefined;
  admitted: number;
  flush: () => Promise<void>;
}

/** An inbound message on its way to storage, whatever the channel. */
export interface InboundMessage {
  organizationId: string;
  channel: MessagingChannel;
  externalId: string;
  from: string;
  text: string | null;
  subject?: string | null;
  messageType: string;
  inReplyTo: string | null;
  threadId?: string | null;
  headers?: { name: string; value: string }[] | null;
  attachments: NewAttachment[];
  sentAt: Date;
  /** The one verdict (libs/text `judgeInbound`) every consumer acts on. */
  judgement: InboundJudgement;
  /** WhatsApp only: the business number it came to, for the read receipt and replies. */
  senderId?: string | null;
}

/**
 * The inbound message pipeline (seed 004 "Scenario 2"): store once per provider id, find or
 * create the contact, conversation and instance, ask abuse (rolling over on the instance verdict),
 * mark read through the outbox, and emit `messaging.message.received`. WhatsApp messages arrive as
 * receipts (`InboundReceiptsService.accept`, one insert, then the gateway answers) and the receipt
 * worker hands each to `takeWhatsApp`; the other channels' `record` RPC
 * (`InboundRecordService`) runs the pipeline before it answers.
 */
@Injectable()
export class InboundService {
  /** Plain reads outside a transaction (one round trip, any pool connection). */
  /** Reads that need no transaction run on the pool. */
  private get reader(): Queryable {
    return poolOf(this.uow.dataSource);
  }

  constructor(
    private readonly uow: UnitOfWork,
    private readonly contacts: ContactsService,
    private readonly contactsRepository: ContactsRepository,
    private readonly conversations: ConversationsRepository,
    private readonly instances: InstancesService,
    private readonly messages: MessagesRepository,
    private readonly guard: AbuseGuardService,
    private readonly sends: SendService,
    private readonly stream: StreamRepository,
    private readonly batch: InboundBatchRepository,
    private readonly metrics: InboundMetrics,
    private readonly clock: Clock,
    @Inject(APP_CONFIG) private readonly config: MessagingConfig,
    @Inject(LOGGER) private readonly logger: Logger,
  ) {}

  /**
   * One Meta message (`value.messages[]`, a receipt's payload) through the pipeline: a `system`
   * message changes the contact's number, any other is parsed and taken (`take`).
   * @param name the sender's profile name from the change's `contacts`, or null
   * @param hints what the receipt worker read already for its batch (`InboundReceiptsService.hintsFor`)
   * @throws AppError service_unavailable (or the pipeline's own code) when it could not be stored or judged
   */
  async takeWhatsApp(raw: WhatsAppInboundBatch['messages'][number], organizationId: string, senderId: string | null, name: string | null, hints: ReceiptHints = {}): Promise<'stored' | 'duplicate' | 'denied' | 'ignored'> {
    if (raw.type === 'system') return this.systemMessage(organizationId, raw);
    return this.take(this.fromWhatsApp(raw, organizationId, senderId), name, true, hints);
  }

  /**
   * A `system` message is Meta telling about the user, not the user writing: never a reply, never
   * in a thread. "Changed number" (`system.wa_id`, or `new_wa_id` before Graph v12) moves the
   * contact to the new number; other system types are ignored.
   */
  private async systemMessage(organizationId: string, raw: WhatsAppInboundBatch['messages'][number]): Promise<'stored' | 'ignored'> {
    const system = (raw as { system?: { type?: unknown; wa_id?: unknown; new_wa_id?: unknown } }).system;
    const newWaId = typeof system?.wa_id === 'string' ? system.wa_id : system?.new_wa_id !== undefined ? String(system.new_wa_id) : null;
    if (!system || !['user_changed_number', 'customer_changed_number'].includes(String(system.type)) || !newWaId) return 'ignored';
    const outcome = await this.uow.run((tx) => this.contacts.changeWhatsAppNumber(tx, organizationId, raw.from, newWaId, raw.id));
    this.logger.info({ event: 'messaging.contact_number_changed', organization_id: organizationId, external_id: raw.id, outcome }, 'WhatsApp user changed number');
    return outcome === 'changed' ? 'stored' : 'ignored';
  }

  private fromWhatsApp(raw: WhatsAppInboundBatch['messages'][number], organizationId: string, senderId: string | null): InboundMessage {
    const parsed: ParsedWhatsAppMessage = parseWhatsAppMessage(raw);
    return {
      organizationId,
      channel: 'whatsapp',
      externalId: parsed.wamid,
      from: parsed.from,
      text: parsed.text,
      messageType: parsed.type,
      inReplyTo: parsed.inReplyTo,
      attachments: parsed.attachments,
      sentAt: parsed.sentAt,
      judgement: judgeInbound({ channel: 'whatsapp', text: parsed.text, textMayOptOut: parsed.typedText }),
      senderId,
    };
  }

  /**
   * One message through the pipeline; never half-stored (each write is one transaction).
   * @param name the sender's name for a contact created here, or null
   * @param checkAbuse whether abuse judges it first (WhatsApp: yes; the `record` channels: no)
   * @throws AppError service_unavailable (or the pipeline's own code) when it could not be stored or judged
   */
  async take(m: InboundMessage, name: string | null, checkAbuse: boolean, hints: ReceiptHints = {}): Promise<'stored' | 'duplicate' | 'denied' | 'ignored'> {
    const end = this.metrics.seconds.startTimer({ channel: m.channel });
    try {
      // Plain reads outside a transaction: the common redelivery and known-contact cases cost one round trip each.
      const known = hints.known ?? (await this.messages.existsExternal(this.reader, m.organizationId, m.channel, m.externalId));
      if (known) {
        this.metrics.received.inc({ channel: m.channel, outcome: 'duplicate' });
        return 'duplicate';
      }
      const found = hints.open !== undefined ? hints.open : await this.findOpen(m);
      let { contact, conversation, instance } = found ?? (await this.uow.run((tx) => this.open(tx, m, name)));

      let verdict: GuardVerdict | null = null;
      if (checkAbuse) {
        for (let i = 0; i <= MAX_ROLLOVERS_PER_MESSAGE; i++) {
          verdict = await this.guard.check(this.checkInput(m, contact, conversation, instance));
          if (verdict.limit_type !== 'instance') break;
          if (i === MAX_ROLLOVERS_PER_MESSAGE) {
            verdict = { ...verdict, allowed: true, limit_type: null };
            break;
          }
          const rolled = await this.instances.rollover(m.organizationId, conversation.id, instance.id);
          if (rolled.outcome === 'refused') {
            verdict = { ...verdict, allowed: false, limit_type: 'throttled' };
            break;
          }
          instance = rolled.instance;
        }
      }
      if (verdict && !verdict.allowed) {
        await this.deny(m, contact, conversation, verdict);
        this.metrics.received.inc({ channel: m.channel, outcome: 'denied' });
        return 'denied';
      }
      const stored = await this.uow.run((tx) => this.store(tx, m, contact, conversation, verdict));
      this.metrics.received.inc({ channel: m.channel, outcome: stored ? 'stored' : 'duplicate' });
      return stored ? 'stored' : 'duplicate';
    } catch (err) {
      this.logger.error({ event: 'messaging.inbound_failed', organization_id: m.organizationId, channel: m.channel, external_id: m.externalId, code: err instanceof AppError ? err.code : undefined, err: (err as Error).message }, 'inbound message not stored');
      if (err instanceof AppError && err.code !== ErrorCode.Internal) throw err;
      throw new AppError(ErrorCode.ServiceUnavailable, 'the message could not be stored; retry');
    } finally {
      end();
    }
  }

  /**
   * The first half of `takeWhatsApp` for the receipt worker's batch: one Meta message is judged
   * (duplicate, abuse with the rollover, denial and its reply) but not stored; an admitted one is
   * returned for `storeAdmitted`, which stores the batch's admitted messages in one transaction. The
   * caller runs one sender's receipts one by one in arrival order with one `lane`, which carries the
   * sender's thread from message to message (no re-read) and counts the admitted messages not yet
   * stored on its instance, so abuse sees each message's instance count as if the earlier ones
   * were stored; before a rollover, `lane.flush` stores them (the capped instance keeps them).
   * A `system` message is taken whole (`takeWhatsApp`) after a flush, and the lane forgets its thread.
   * @param known whether the provider id is stored already (`InboundReceiptsService.hintsFor`)
   * @throws AppError service_unavailable (or the pipeline's own code) when it could not be judged
   */
  async admitWhatsApp(raw: WhatsAppInboundBatch['messages'][number], organizationId: string, senderId: string | null, name: string | null, known: boolean, lane: SenderLane): Promise<'stored' | 'duplicate' | 'denied' | 'ignored' | AdmittedMessage> {
    if (raw.type === 'system') {
      await lane.flush();
      lane.open = undefined;
      lane.admitted = 0;
      return this.takeWhatsApp(raw, organizationId, senderId, name, { known });
    }
    const m = this.fromWhatsApp(raw, organizationId, senderId);
    const end = this.metrics.seconds.startTimer({ channel: m.channel });
    try {
      if (known) {
        this.metrics.received.inc({ channel: m.channel, outcome: 'duplicate' });
        return 'duplicate';
      }
      let thread = lane.open !== undefined ? lane.open : await this.findOpen(m);
      if (!thread) {
        thread = await this.uow.run((tx) => this.open(tx, m, name));
        lane.admitted = 0;
      }
      lane.open = thread;
      const { contact, conversation } = thread;
      let verdict: GuardVerdict | null = null;
      for (let i = 0; i <= MAX_ROLLOVERS_PER_MESSAGE; i++) {
        const instance = lane.open.instance;
        verdict = await this.guard.check(this.checkInput(m, contact, conversation, { ...instance, message_count: instance.message_count + lane.admitted }));
        if (verdict.limit_type !== 'instance') break;
        if (i === MAX_ROLLOVERS_PER_MESSAGE) {
          verdict = { ...verdict, allowed: true, limit_type: null };
          break;
        }
        await lane.flush();
        const rolled = await this.instances.rollover(m.organizationId, conversation.id, instance.id);
        if (rolled.outcome === 'refused') {
          verdict = { ...verdict, allowed: false, limit_type: 'throttled' };
          break;
        }
        lane.open = { contact, conversation, instance: rolled.instance };
        lane.admitted = 0;
      }
      if (verdict && !verdict.allowed) {
        await this.deny(m, contact, conversation, verdict);
        this.metrics.received.inc({ channel: m.channel, outcome: 'denied' });
        return 'denied';
      }
      lane.admitted++;
      return { m, contact, conversation, verdict };
    } catch (err) {
      this.logger.error({ event: 'messaging.inbound_failed', organization_id: m.organizationId, channel: m.channel, external_id: m.externalId, code: err instanceof AppError ? err.code : undefined, err: (err as Error).message }, 'inbound message not stored');
      if (err instanceof AppError && err.code !== ErrorCode.Internal) throw err;
      throw new AppError(ErrorCode.ServiceUnavailable, 'the message could not be stored; retry');
    } finally {
      end();
    }
  }

  /**
   * Finds or creates, in one transaction of set-based statements, the contact, WhatsApp
   * conversation and active instance of each new sender of a receipt batch (what `open` does for
   * one message): the contacts read, the missing ones created (`contact.created` and its feed item),
   * the conversations ensured, locked in id order, and an instance opened where none is active
   * (its feed item). Inserts go in key order, so two replicas' batches that share senders wait on
   * each other in one order. A row another transaction created meanwhile is read again (one by one).
   * @param senders phone keys (libs/phone `toPhoneKey`) with the name a created contact gets
   * @returns by `${organization_id}|${phone_key}`
   */
  async openThreads(senders: { organization_id: string; phone_key: string; name: string | null }[]): Promise<Map<string, OpenThread>> {
    if (senders.length === 0) return new Map();
    const keyOf = (organizationId: string, phoneKey: string) => `${organizationId}|${phoneKey}`;
    const sorted = [...senders].sort((a, b) => (keyOf(a.organization_id, a.phone_key) < keyOf(b.organization_id, b.phone_key) ? -1 : 1));
    return this.uow.run(async (tx) => {
      const now = this.clock.now();
      const contacts = await this.batch.findPhoneContacts(tx, sorted);
      const created = await this.batch.insertPhoneContacts(
        tx,
        sorted.filter((s) => !contacts.has(keyOf(s.organization_id, s.phone_key))),
        now,
      );
      for (const c of created) contacts.set(keyOf(c.organization_id, c.phone_key!), c);
      for (const s of sorted) {
        const key = keyOf(s.organization_id, s.phone_key);
        if (contacts.has(key)) continue;
        const winner = await this.contactsRepository.findByPhoneKey(tx, s.organization_id, s.phone_key);
        if (!winner) throw new AppError(ErrorCode.ServiceUnavailable, 'contact creation raced; retry');
        contacts.set(key, winner);
      }
      const distinct = [...new Map([...contacts.values()].map((c) => [c.id, c])).values()].sort((a, b) => (a.id < b.id ? -1 : 1));
      const conversations = await this.batch.ensureConversations(
        tx,
        distinct.map((c) => ({ organization_id: c.organization_id, contact_id: c.id })),
        'whatsapp',
        now,
      );
      for (const c of distinct) if (!conversations.has(c.id)) conversations.set(c.id, await this.conversations.ensureConversation(tx, c.organization_id, c.id, 'whatsapp', now));
      const conversationIds = [...conversations.values()].map((c) => c.id);
      await this.batch.lockConversations(tx, conversationIds);
      const instances = await this.batch.lockActiveInstances(tx, conversationIds);
      const toOpen = [...conversations.values()].filter((c) => !instances.has(c.id)).sort((a, b) => (a.id < b.id ? -1 : 1));
      const opened = await this.batch.openInstances(
        tx,
        toOpen.map((c) => ({ organization_id: c.organization_id, conversation_id: c.id })),
        now,
      );
      for (const i of opened) instances.set(i.conversation_id, i);
      for (const c of toOpen) if (!instances.has(c.id)) instances.set(c.id, await this.instances.activeInstanceLocked(tx, c, now));
      const events = created.map(contactCreated);
      if (events.length) await tx.publish(events);
      const contactOf = new Map([...conversations.values()].map((c) => [c.id, c.contact_id]));
      for (const [i, c] of created.entries()) await this.stream.append(tx, c.organization_id, events[i]!.type, events[i]!.data);
      for (const i of opened) await this.stream.append(tx, i.organization_id, MessagingEvents.InstanceOpened, instanceData(i, contactOf.get(i.conversation_id)!, null, null));
      const threads = new Map<string, OpenThread>();
      for (const s of sorted) {
        const contact = contacts.get(keyOf(s.organization_id, s.phone_key))!;
        const conversation = conversations.get(contact.id)!;
        threads.set(keyOf(s.organization_id, s.phone_key), { contact, conversation, instance: instances.get(conversation.id)! });
      }
      return threads;
    });
  }

  /**
   * Stores admitted messages (`admitWhatsApp`), in their order, in the caller's transaction, with
   * one statement per step for all of them where `store` runs one per message: the conversations
   * locked (id order), their active instances locked (opened where the idle sweep closed one), the
   * messages inserted (a provider id stored meanwhile is a duplicate and tells nothing), their
   * attachments, the conversations touched, every event in one outbox insert, every feed item in
   * one insert. The rare per-message steps (an opt-out marks its contact; an abuse warning sends
   * its reply) run per message in the same transaction.
   * @returns the provider ids stored; the others were duplicates
   */
  async storeAdmitted(tx: Tx, admitted: AdmittedMessage[]): Promise<Set<string>> {
    if (admitted.length === 0) return new Set();
    const now = this.clock.now();
    const conversationIds = [...new Set(admitted.map((a) => a.conversation.id))];
    const locked = await this.batch.lockConversations(tx, conversationIds);
    const instances = await this.batch.lockActiveInstances(tx, conversationIds);
    for (const id of conversationIds) {
      if (!instances.has(id)) instances.set(id, await this.instances.activeInstanceLocked(tx, locked.get(id) ?? admitted.find((a) => a.conversation.id === id)!.conversation, now));
    }
    const rows = await this.batch.insertInbound(
      tx,
      admitted.map(({ m, contact, conversation }) => ({
        organization_id: m.organizationId,
        conversation_id: conversation.id,
        instance_id: instances.get(conversation.id)!.id,
        contact_id: contact.id,
        channel: m.channel,
        message_type: m.messageType,
        body: m.text,
        external_id: m.externalId,
        in_reply_to: m.inReplyTo,
        auto_reply: m.judgement.autoReply,
        opt_out: m.judgement.optOut,
        provider_timestamp: m.sentAt,
      })),
      now,
    );
    const stored = admitted.filter((a) => rows.has(a.m.externalId));
    await this.batch.insertAttachments(
      tx,
      stored.flatMap(({ m }) => m.attachments.map((attachment) => ({ organization_id: m.organizationId, message_id: rows.get(m.externalId)!.id, attachment }))),
      now,
    );
    await this.batch.touchConversations(tx, [...new Set(stored.map((a) => a.conversation.id))], now);
    for (const { m, contact } of stored) if (m.judgement.optOut) await this.contactsRepository.markOptedOut(tx, contact.id, now);
    await tx.publish(stored.flatMap(({ m, contact, conversation }) => this.eventsOf(m, contact, conversation, instances.get(conversation.id)!, rows.get(m.externalId)!)));
    for (const { m } of stored) await this.stream.append(tx, m.organizationId, MessagingEvents.MessageReceived, toMessageView(rows.get(m.externalId)!, []));
    for (const { m, contact, conversation, verdict } of stored) {
      if (verdict?.action?.action_type === 'warning') await this.reply(tx, m, contact, conversation, 'abuse_warning', this.config.ABUSE_WARNING_REPLY);
    }
    for (const { m } of admitted) this.metrics.received.inc({ channel: m.channel, outcome: rows.has(m.externalId) ? 'stored' : 'duplicate' });
    return new Set(stored.map((a) => a.m.externalId));
  }

  /**
   * Stores one admitted message on its own (`store`, its own transaction): the worker's way when
   * its batch transaction failed, to find which message it was.
   * @returns false for a duplicate
   * @throws AppError service_unavailable when it could not be stored
   */
  async storeOne(a: AdmittedMessage): Promise<boolean> {
    try {
      const stored = await this.uow.run((tx) => this.store(tx, a.m, a.contact, a.conversation, a.verdict));
      this.metrics.received.inc({ channel: a.m.channel, outcome: stored ? 'stored' : 'duplicate' });
      return stored;
    } catch (err) {
      this.logger.error({ event: 'messaging.inbound_failed', organization_id: a.m.organizationId, channel: a.m.channel, external_id: a.m.externalId, code: err instanceof AppError ? err.code : undefined, err: (err as Error).message }, 'inbound message not stored');
      if (err instanceof AppError && err.code !== ErrorCode.Internal) throw err;
      throw new AppError(ErrorCode.ServiceUnavailable, 'the message could not be stored; retry');
    }
  }

  /** The contact, conversation and active instance of a phone that has them all already (one query), or null. */
  private async findOpen(m: InboundMessage): Promise<OpenThread | null> {
    if (m.channel !== 'whatsapp' && m.channel !== 'sms') return null;
    const key = toPhoneKey(m.from);
    if (!key) return null;
    return this.conversations.findOpenThread(this.reader, m.organizationId, key, m.channel);
  }

  /** Finds or creates the contact, conversation and active instance of an inbound message. */
  private async open(tx: Tx, m: InboundMessage, name: string | null): Promise<{ contact: ContactRow; conversation: ConversationRow; instance: InstanceRow }> {
    const now = this.clock.now();
    let contact: ContactRow;
    if (m.channel === 'whatsapp' || m.channel === 'sms') {
      const key = toPhoneKey(m.from);
      if (!key) throw new AppError(ErrorCode.ValidationFailed, `not a phone number: ${m.from}`, { field: 'from' });
      contact = await this.contacts.findOrCreateByPhone(tx, m.organizationId, key, name);
    } else {
      contact = await this.contacts.findOrCreateByAddress(tx, m.organizationId, m.channel, m.from, name);
    }
    const conversation = await this.conversations.ensureConversation(tx, m.organizationId, contact.id, m.channel, now);
    let instance = await this.conversations.findActiveInstance(tx, conversation.id);
    if (!instance) {
      await this.conversations.lockConversation(tx, conversation.id);
      instance = await this.instances.activeInstanceLocked(tx, conversation, now);
    }
    return { contact, conversation, instance };
  }

  private checkInput(m: InboundMessage, contact: ContactRow, conversation: ConversationRow, instance: InstanceRow): AbuseCheckData {
    return {
      organization_id: m.organizationId,
      contact_id: contact.id,
      conversation_id: conversation.id,
      instance_id: instance.id,
      instance_message_count: instance.message_count,
      channel: m.channel,
      user_type: contact.user_type,
      message_ref: m.externalId,
      text: m.text,
      sent_at: m.sentAt.toISOString(),
    };
  }

  /**
   * Stores the message (unique provider id: a concurrent duplicate finds the row taken and stops
   * here), then in the same transaction: opt-out, the read receipt, the received event, the feed.
   * @returns false for a duplicate
   */
  private async store(tx: Tx, m: InboundMessage, contact: ContactRow, conversation: ConversationRow, verdict: GuardVerdict | null): Promise<boolean> {
    const now = this.clock.now();
    await this.conversations.lockConversation(tx, conversation.id);
    const instance = await this.instances.activeInstanceLocked(tx, conversation, now);
    const message = await this.messages.insert(tx, {
      organization_id: m.organizationId,
      conversation_id: conversation.id,
      instance_id: instance.id,
      contact_id: contact.id,
      channel: m.channel,
      direction: 'inbound',
      sender_type: 'contact',
      sender_id: contact.id,
      message_type: m.messageType,
      body: m.text,
      subject: m.subject ?? null,
      status: 'received',
      external_id: m.externalId,
      thread_id: m.threadId ?? null,
      in_reply_to: m.inReplyTo,
      headers: m.headers ?? undefined,
      auto_reply: m.judgement.autoReply,
      opt_out: m.judgement.optOut,
      provider_timestamp: m.sentAt,
      created_at: now,
    });
    if (!message) return false;
    await this.messages.insertAttachments(tx, m.organizationId, message.id, m.attachments, now);
    await this.conversations.touch(tx, conversation.id, now, true);

    if (m.judgement.optOut) await this.contactsRepository.markOptedOut(tx, contact.id, now);
    await tx.publish(this.eventsOf(m, contact, conversation, instance, message));
    await this.stream.append(tx, m.organizationId, MessagingEvents.MessageReceived, toMessageView(message, []));

    if (verdict?.action?.action_type === 'warning') {
      await this.reply(tx, m, contact, conversation, 'abuse_warning', this.config.ABUSE_WARNING_REPLY);
    }
    return true;
  }

  /**
   * What a stored inbound message tells others, in this order: the reply hold (email and
   * LinkedIn: `messaging.inbound.acknowledged`; WhatsApp published it with its receipt), the opt-out (the contact opted out,
   * and a suppression asked for each address it has: "stop" means every channel, seed 003), the
   * read receipt (WhatsApp, seed 004 "Read receipts": through the outbox like any send, one per
   * wamid), and `messaging.message.received`.
   */
  private eventsOf(m: InboundMessage, contact: ContactRow, conversation: ConversationRow, instance: InstanceRow, message: MessageRow): OutgoingMessage[] {
    const published: OutgoingMessage[] = [];
    if (m.channel === 'email' || m.channel === 'linkedin') {
      // The `record` channels store the message at their acknowledgement: the hold rides this
      // transaction (WhatsApp's rode its receipt's, `replyHolds`), ahead of the received event.
      const hold: InboundAcknowledgedData = { channel: m.channel, from: m.from, sender_id: m.senderId ?? null, acknowledged_at: new Date(message.created_at).toISOString() };
      published.push({ event_id: `${MessagingEvents.InboundAcknowledged}:${m.organizationId}:${m.channel}:${m.externalId}`, type: MessagingEvents.InboundAcknowledged, organization_id: m.organizationId, data: hold });
    }
    if (m.judgement.optOut) {
      published.push({ event_id: `messaging.contact.opted_out:${message.id}`, type: MessagingEvents.ContactOptedOut, organization_id: m.organizationId, data: { contact_id: contact.id, channel: m.channel, message_id: message.id } });
      const addresses: [SuppressionRequestedData['channel'], string | null][] = [
        ['whatsapp', contact.phone],
        ['email', contact.email],
        ['linkedin', contact.linkedin_provider_id],
      ];
      for (const [channel, value] of addresses) {
        if (!value) continue;
        published.push({
          event_id: `messaging.suppression.requested:${message.id}:${channel}`,
          type: MessagingEvents.SuppressionRequested,
          organization_id: m.organizationId,
          data: { contact_id: contact.id, channel, value, reason: 'opt_out' },
        });
      }
    }
    if (m.channel === 'whatsapp') {
      // Seed 004 "Read receipts": through the outbox like any send, one per wamid.
      const receipt: OutboxEnqueueData = {
        organization_id: m.organizationId,
        channel: 'whatsapp',
        sender_id: m.senderId ?? null,
        to: m.from,
        idempotency_key: `read:${m.externalId}`,
        payload: { type: 'read_receipt', message_id: m.externalId },
        log_context: { message_id: message.id, conversation_id: conversation.id },
        requester: 'messaging',
      };
      published.push({ event_id: `messaging.read_receipt:${m.organizationId}:${m.externalId}`, type: OutboxCommands.Enqueue, organization_id: m.organizationId, data: receipt });
    }
    const received: MessageReceivedData = {
      message_id: message.id,
      conversation_id: conversation.id,
      instance_id: instance.id,
      contact_id: contact.id,
      channel: m.channel,
      direction: 'inbound',
      external_id: m.externalId,
      thread_id: m.threadId ?? null,
      text: m.text,
      message_type: m.messageType,
      in_reply_to: m.inReplyTo,
      sender_id: m.senderId ?? null,
      auto_reply: m.judgement.autoReply,
      opt_out: m.judgement.optOut,
      ...(m.judgement.certain ? {} : { judgement_certain: false }),
      from: contact.phone ?? contact.email ?? m.from,
      received_at: m.sentAt.toISOString(),
    };
    published.push({ event_id: `messaging.message.received:${message.id}`, type: MessagingEvents.MessageReceived, organization_id: m.organizationId, data: received });
    return published;
  }

  /**
   * A denied message is not stored, but the person did answer: `messaging.inbound.denied` tells
   * followups, which stops on it as on a reply (a rate-limited "já resolvi" must not let a
   * `cancel_on_reply` send go once the dispatcher's reply hold runs out). A blocked contact (or a
   * fail-closed denial) also gets the access-restricted reply, in the same transaction. The event's
   * id is the message's, so a retried denial publishes it once.
   */
  private async deny(m: InboundMessage, contact: ContactRow, conversation: ConversationRow, verdict: GuardVerdict): Promise<void> {
    this.logger.warn({ event: 'messaging.inbound_denied', organization_id: m.organizationId, contact_id: contact.id, external_id: m.externalId, limit_type: verdict.limit_type, source: verdict.source, reset_at: verdict.reset_at }, 'inbound message denied');
    if (m.channel !== 'whatsapp') return;
    const restricted = verdict.limit_type === 'blocked' || verdict.source === 'fail_closed';
    const denied: InboundDeniedData = {
      contact_id: contact.id,
      conversation_id: conversation.id,
      channel: 'whatsapp',
      external_id: m.externalId,
      sender_id: m.senderId ?? null,
      text: m.text,
      auto_reply: m.judgement.autoReply,
      opt_out: m.judgement.optOut,
      limit_type: verdict.limit_type ?? null,
    };
    await this.uow.run(async (tx) => {
      await tx.publish({ event_id: `${MessagingEvents.InboundDenied}:${m.organizationId}:${m.channel}:${m.externalId}`, type: MessagingEvents.InboundDenied, organization_id: m.organizationId, data: denied });
      if (restricted) await this.reply(tx, m, contact, conversation, 'access_restricted', this.config.ACCESS_RESTRICTED_REPLY);
    });
  }

  /** A system reply to an inbound message, keyed `reply:{externalId}:{purpose}` (seed 004 "Idempotency keys"). */
  private async reply(tx: Tx, m: InboundMessage, contact: ContactRow, conversation: ConversationRow, purpose: string, text: string): Promise<void> {
    await this.sends.sendInTx(
      tx,
      {
        organization_id: m.organizationId,
        idempotency_key: `reply:${m.externalId}:${purpose}`,
        channel: m.channel,
        contact_id: contact.id,
        sender_type: 'system',
        requester: 'messaging',
        outbox_sender_id: m.senderId ?? undefined,
        text,
        context: { purpose, inbound_external_id: m.externalId },
      },
      { contact, conversation },
    );
  }
}
