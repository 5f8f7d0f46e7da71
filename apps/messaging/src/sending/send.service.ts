import { isDeepStrictEqual } from 'node:util';
import { Inject, Injectable } from '@nestjs/common';
import { Counter } from 'prom-client';
import {
  CHANNEL_TEXT_MAX,
  MESSAGING_CHANNELS,
  MessagingEvents,
  type MessagingSendData,
  type MessagingSendResult,
  type MessageOutcomeData,
  type OutboxChannel,
  OutboxCommands,
  type OutboxEnqueueData,
  type OutboxPayload,
  type OutgoingMessage,
  validateOutboxPayload,
} from '@touchpoint/contracts';
import { isUuid, requireString, type Tx } from '@touchpoint/database';
import { AppError, ErrorCode, httpStatusOf } from '@touchpoint/errors';
import { type Logger, METRIC_PREFIX, Metrics } from '@touchpoint/observability';
import { LOGGER, UnitOfWork } from '@touchpoint/runtime';
import { codePointLength } from '@touchpoint/text';
import { Clock } from '@touchpoint/time';
import { type ContactRow, ContactsRepository } from '../contacts/contacts.repository.js';
import { contactCreated, ContactsService, normalizePhone } from '../contacts/contacts.service.js';
import { type ConversationRow, ConversationsRepository, type InstanceRow } from '../conversations/conversations.repository.js';
import { instanceData } from '../conversations/instances.service.js';
import { InboundBatchRepository } from '../inbound/inbound-batch.repository.js';
import { type MessageRow, MessagesRepository, toMessageView } from '../messages/messages.repository.js';
import { StreamRepository } from '../stream/stream.repository.js';
import { type NewSend, SendRepository, sendKeyOf } from './send.repository.js';

/** Channels whose sends go through the outbox-dispatcher (it owns every wire call, DESIGN §4). */
const DISPATCHED_CHANNELS = new Set(['whatsapp', 'email', 'linkedin']);
/** Channels delivered by storing the message (the client reads it in the thread or the feed). */
const STORED_CHANNELS = new Set(['web', 'in_app']);
/**
 * Longest idempotency key a send takes, in characters (Unicode code points, as every text limit:
 * libs/text). Bus callers build theirs from their cause (`reply:{wamid}:{purpose}`, `read:{wamid}`,
 * seed 004 "Idempotency keys"); a REST client's key is held to the API's 150 at the gateway.
 */
const MAX_KEY_LENGTH = 200;
/** Senders whose sends are never held after a reply (`MessagingSendData.stop_on_reply` is ignored on them). */
const NEVER_HELD = new Set<string>(['operator', 'system', 'notification', 'contact']);

/** The outcome of writing a send: the message row and whether this call created it. */
export interface SendWrite {
  message: MessageRow;
  created: boolean;
}

/** The dispatcher payload of a send, with an email's subject. */
type SendPayload = OutboxPayload & { subject?: string };

/**
 * What a send wrote before its events (`SendService.announce` writes those): its contact and
 * recipient address, its locked conversation, the instance the message went into (null: none could
 * be opened) and whether the send opened it, and the message (null: a concurrent send of the key won).
 */
interface SendRows {
  contact: ContactRow;
  address: string | null;
  payload: SendPayload;
  conversation: ConversationRow;
  instance: InstanceRow | null;
  opened: boolean;
  message: MessageRow | null;
}

/** The first command of a key in a prepared batch: its handler announces what was written for it, or throws its refusal. */
interface PreparedSend {
  data: MessagingSendData;
  /** Its handler took it (a later command of the key is then a repeat). */
  taken: boolean;
  /** Why it was refused before anything of it was written (its handler throws it), if it was. */
  refusal?: unknown;
  rows?: SendRows;
}

/**
 * What `prepareBatch` read, locked and wrote for the `messaging.send` commands of one consumer
 * transaction, for their handlers (`sendInTx` in the same transaction). The conversations of
 * `writers` stay locked until the transaction ends, so what was written for them stays true.
 */
interface SendBatch {
  /** The instant of every row of the batch (one `Clock.now()`). */
  now: Date;
  /** Each key's message, by `sendKeyOf`: stored before the batch, or written by its writer once that ran. */
  messages: Map<string, MessageRow>;
  /** Each key the batch wrote or refused, by `sendKeyOf`: its first command whose key had no message. */
  writers: Map<string, PreparedSend>;
}

/** A writer of `prepareBatch` on its way: what it found so far. */
interface Pending {
  prepared: PreparedSend;
  payload: SendPayload;
  contact?: ContactRow | null;
  address?: string | null;
  conversation?: ConversationRow;
}

/** The contact a send names by id, when that id can name a row (the key's read looks it up). */
const namedContactOf = (data: MessagingSendData): string | null => (data.contact_id && isUuid(data.contact_id) ? data.contact_id : null);
const keyOfSend = (data: MessagingSendData): string => sendKeyOf(data.organization_id, data.idempotency_key);
const byKey =
  <T>(key: (item: T) => string) =>
  (a: T, b: T): number =>
    key(a) < key(b) ? -1 : key(a) > key(b) ? 1 : 0;

/**
 * The shared send path (DESIGN §4): validates, writes the outbound message `queued` in
 * the conversation's active instance, and asks the dispatcher to send it with the caller's
 * idempotency key, all in one transaction. The same key twice is one message and one entry.
 * A send is four statements (`sendInTx`), a repeated key one; a consumer batch of `messaging.send`
 * commands is a few for the whole batch (`prepareBatch`).
 */
@Injectable()
export class SendService {
  private readonly sends: Counter<'channel' | 'outcome'>;
  /** The prepared batch of sends of a consumer transaction (`prepareBatch`). */
  private readonly batches = new WeakMap<Tx, SendBatch>();

  constructor(
    private readonly uow: UnitOfWork,
    private readonly contacts: ContactsService,
    private readonly contactsRepository: ContactsRepository,
    private readonly conversations: ConversationsRepository,
    private readonly batchRepository: InboundBatchRepository,
    private readonly repository: SendRepository,
    private readonly messages: MessagesRepository,
    private readonly stream: StreamRepository,
    private readonly clock: Clock,
    metrics: Metrics,
    @Inject(LOGGER) private readonly logger: Logger,
  ) {
    this.sends = new Counter({ name: `${METRIC_PREFIX}messaging_sends_total`, help: 'Sends written by the shared send path, by channel and outcome', labelNames: ['channel', 'outcome'], registers: [metrics.registry] });
  }

  /**
   * The RPC form: one transaction, answered after it committed.
   * @throws AppError validation_failed, not_found (contact, conversation), invalid_payload; the enqueue failure is logged as `messaging.send_enqueue_failed`
   */
  async send(data: MessagingSendData, options: SendOptions = {}): Promise<MessagingSendResult> {
    try {
      const { message, created } = await this.uow.run((tx) => this.sendInTx(tx, data, undefined, options));
      return {
        message_id: message.id,
        conversation_id: message.conversation_id,
        instance_id: message.instance_id,
        contact_id: message.contact_id,
        status: message.status,
        created,
      };
    } catch (err) {
      this.logEnqueueFailure(data, err);
      throw err;
    }
  }

  /** Logs a send that was never queued (seed 004: distinct from a delivery failure). */
  logEnqueueFailure(data: Partial<MessagingSendData>, err: unknown): void {
    this.sends.inc({ channel: String(data?.channel ?? 'unknown'), outcome: 'enqueue_failed' });
    this.logger[enqueueFailureLevel(err)](
      {
        event: 'messaging.send_enqueue_failed',
        organization_id: data?.organization_id,
        idempotency_key: data?.idempotency_key,
        requester: data?.requester,
        channel: data?.channel,
        code: err instanceof AppError ? err.code : ErrorCode.Internal,
        err: (err as Error).message,
      },
      'send was not queued',
    );
  }

  /** The `messaging.failed` event for a send command that could not even be written. */
  failedCommandEvent(data: Partial<MessagingSendData>, err: unknown) {
    const payload: MessageOutcomeData = {
      message_id: null,
      conversation_id: null,
      contact_id: null,
      channel: (data?.channel ?? 'whatsapp') as MessageOutcomeData['channel'],
      idempotency_key: String(data?.idempotency_key ?? ''),
      requester: String(data?.requester ?? ''),
      status: 'failed',
      failure_stage: 'enqueue',
      error_code: err instanceof AppError ? err.code : ErrorCode.Internal,
      context: data?.context,
    };
    return { event_id: `messaging.message.failed:cmd:${data?.organization_id}:${data?.idempotency_key}`, type: MessagingEvents.MessageFailed, organization_id: data?.organization_id ?? null, data: payload };
  }

  /**
   * Writes a send in the caller's transaction (replies from the inbound path, notification
   * deliveries, the `messaging.send` command). Returns the existing message for a repeated key.
   * In a consumer batch whose `prepareBatch` wrote or refused this command's key, it answers from
   * what that did (its events and feed items are all that is left to write); otherwise it writes
   * the send alone.
   * @throws AppError validation_failed, not_found, invalid_payload (`details.errors`: the
   *   dispatcher's own payload rules refuse it; nothing is written)
   */
  async sendInTx(tx: Tx, data: MessagingSendData, known?: { contact: ContactRow; conversation: ConversationRow }, options: SendOptions = {}): Promise<SendWrite> {
    validate(data);
    const batch = known ? undefined : this.batches.get(tx);
    const prepared = batch && (await this.fromBatch(tx, batch, data, options));
    if (prepared) return prepared;
    const now = this.clock.now();
    // Statement 1: the key's message and the named contact together (a repeated key reads no more).
    const byId = !known && data.contact_id ? data.contact_id : null;
    const start = await this.repository.start(tx, data.organization_id, data.idempotency_key, byId && isUuid(byId) ? byId : null);
    if (start.existing) {
      if (options.sameRequestOnly) refuseDifferentRequest(start.existing, data);
      return { message: start.existing, created: false };
    }
    const payload = dispatchablePayloadOf(data);

    const contact = liveContact(known?.contact ?? (byId ? start.contact : await this.contactByAddress(tx, data)));
    const address = recipientOf(data, contact);
    // Statement 2: the conversation's lock (every message writer takes it first), its touch, and
    // for a first send its row, in one.
    const named = known?.conversation.id ?? data.conversation_id;
    let conversation: ConversationRow | null;
    if (!named) conversation = await this.conversations.lockOrCreateTouched(tx, data.organization_id, contact.id, data.channel, now);
    else conversation = isUuid(named) ? await this.conversations.lockTouched(tx, data.organization_id, named, contact.id, data.channel, now) : null;
    if (!conversation) throw new AppError(ErrorCode.NotFound, 'conversation not found');

    // Statement 3: the active instance (locked, or opened) and the message.
    const written = await this.repository.insertInActiveInstance(tx, newSendOf(data, payload, conversation.id, contact.id, now));
    return this.announce(tx, data, { contact, address, payload, conversation, ...written }, options, now);
  }

  /**
   * Prepares, in `tx`, the `messaging.send` commands of one consumer batch (`BeforeBusBatch`) for
   * their handlers (`sendInTx` in the same `tx`), doing for all of them what `sendInTx` does for
   * one, a statement per step: the keys' messages and the named contacts (one read), the contacts
   * of addresses (a phone: one read and, for new ones, one insert; another address: as alone), the
   * conversations ensured per channel, all of them locked in id order, their active instances
   * locked and the missing ones opened, then every message written with its conversation's touch
   * (one insert). Each handler then writes its events and feed items (one outbox insert and one
   * feed insert for the batch, at the commit). Only the first command of a key that has no message
   * writes it (a later one answers that message); a command refused on the way (unknown contact,
   * foreign conversation, a payload the dispatcher would refuse, no address) writes nothing and its
   * handler throws the refusal; a command that fails validation is left out (its handler rejects
   * it alone, before any SQL).
   *
   * Lock order, as the inbound batch (`InboundService.openThreads`, `storeAdmitted`) takes its
   * locks and as a send alone takes its one conversation's: new contacts in key order, new
   * conversations in (channel, contact) order, then every conversation in id order, then their
   * instances, then the messages. Two batches, or a batch and a lone writer, then wait for each
   * other in one order instead of deadlocking (the rare steps taken one by one, an email or
   * LinkedIn address's contact or a key whose first command was refused, may still deadlock: the
   * bus then runs the batch's messages one by one).
   * @throws AppError service_unavailable when an instance or a contact creation raced (the batch
   *   then runs message by message)
   */
  async prepareBatch(tx: Tx, items: MessagingSendData[]): Promise<void> {
    const commands = items.filter((data) => {
      try {
        validate(data);
        return true;
      } catch {
        return false;
      }
    });
    if (commands.length > 0) this.batches.set(tx, await this.prepare(tx, commands));
  }

  /** What `sendInTx` does up to the events, for a batch (see `prepareBatch`). */
  private async prepare(tx: Tx, commands: MessagingSendData[]): Promise<SendBatch> {
    const now = this.clock.now();
    const start = await this.repository.startBatch(
      tx,
      commands.map((data) => ({ organizationId: data.organization_id, key: data.idempotency_key, contactId: namedContactOf(data) })),
    );
    const batch: SendBatch = { now, messages: start.messages, writers: new Map() };
    let pending: Pending[] = [];
    for (const data of commands) {
      const key = keyOfSend(data);
      if (batch.messages.has(key) || batch.writers.has(key)) continue;
      const prepared: PreparedSend = { data, taken: false };
      batch.writers.set(key, prepared);
      try {
        pending.push({ prepared, payload: dispatchablePayloadOf(data) });
      } catch (err) {
        prepared.refusal = err;
      }
    }
    await this.contactsOf(tx, pending, start.contacts, now);
    pending = notRefused(pending, (p) => {
      const contact = liveContact(p.contact ?? null);
      return { ...p, contact, address: recipientOf(p.prepared.data, contact) };
    });
    await this.conversationsOf(tx, pending, now);
    pending = notRefused(pending, (p) => p);
    if (pending.length === 0) return batch;

    const conversationIds = [...new Set(pending.map((p) => p.conversation!.id))];
    const instances = await this.batchRepository.lockActiveInstances(tx, conversationIds);
    const toOpen = conversationIds.filter((id) => !instances.has(id)).sort();
    const opened = await this.batchRepository.openInstances(
      tx,
      toOpen.map((id) => ({ organization_id: pending.find((p) => p.conversation!.id === id)!.conversation!.organization_id, conversation_id: id })),
      now,
    );
    for (const instance of opened) instances.set(instance.conversation_id, instance);
    // The conversations are locked: only a writer that skipped their lock could have opened one meanwhile.
    if (toOpen.some((id) => !instances.has(id))) throw new AppError(ErrorCode.ServiceUnavailable, 'instance creation raced; retry');

    const written = await this.repository.insertBatch(
      tx,
      pending.map((p) => ({ ...newSendOf(p.prepared.data, p.payload, p.conversation!.id, p.contact!.id, now), instance_id: instances.get(p.conversation!.id)!.id })),
    );
    // The feed's `instance opened` item goes with the first message written into it, as alone.
    const announcesOpening = new Set(opened.map((i) => i.conversation_id));
    for (const p of pending) {
      const conversation = p.conversation!;
      p.prepared.rows = {
        contact: p.contact!,
        address: p.address ?? null,
        payload: p.payload,
        conversation,
        instance: instances.get(conversation.id)!,
        opened: announcesOpening.delete(conversation.id),
        message: written.get(keyOfSend(p.prepared.data)) ?? null,
      };
    }
    return batch;
  }

  /**
   * The contact of each send (`Pending.contact`; null: none): the one it names, read by the key's
   * read, or the one of its address, found or created as `contactByAddress` does (phones: all in one
   * read and one insert, in key order; other addresses one by one, in address order). An address
   * refused (not a phone, not an email) refuses its send.
   */
  private async contactsOf(tx: Tx, pending: Pending[], named: Map<string, ContactRow>, now: Date): Promise<void> {
    const phones: { p: Pending; organization_id: string; phone_key: string }[] = [];
    const others: Pending[] = [];
    for (const p of pending) {
      const data = p.prepared.data;
      if (data.contact_id) p.contact = named.get(sendKeyOf(data.organization_id, data.contact_id)) ?? null;
      else if (!data.to || (data.channel !== 'whatsapp' && data.channel !== 'sms')) others.push(p);
      else {
        try {
          phones.push({ p, organization_id: data.organization_id, phone_key: normalizePhone(data.to)!.phone_key });
        } catch (err) {
          p.prepared.refusal = err;
        }
      }
    }
    if (phones.length > 0) {
      const keyOf = (s: { organization_id: string; phone_key: string }) => `${s.organization_id}|${s.phone_key}`;
      const wanted = [...new Map(phones.map((s) => [keyOf(s), { organization_id: s.organization_id, phone_key: s.phone_key }])).values()].sort(byKey(keyOf));
      const found = await this.batchRepository.findPhoneContacts(tx, wanted);
      const created = await this.batchRepository.insertPhoneContacts(
        tx,
        wanted.filter((s) => !found.has(keyOf(s))).map((s) => ({ ...s, name: null })),
        now,
      );
      for (const contact of created) found.set(keyOf({ organization_id: contact.organization_id, phone_key: contact.phone_key! }), contact);
      for (const s of wanted) {
        if (found.has(keyOf(s))) continue;
        // Another transaction created it after this one's read: its insert decided (`contacts_phone_uidx`).
        const winner = await this.contactsRepository.findByPhoneKey(tx, s.organization_id, s.phone_key);
        if (!winner) throw new AppError(ErrorCode.ServiceUnavailable, 'contact creation raced; retry');
        found.set(keyOf(s), winner);
      }
      const events = created.map(contactCreated);
      if (events.length > 0) await tx.publish(events);
      for (const event of events) await this.stream.append(tx, event.organization_id!, event.type, event.data);
      for (const s of phones) s.p.contact = found.get(keyOf(s))!;
    }
    for (const p of others.sort(byKey((o) => `${o.prepared.data.organization_id}|${o.prepared.data.channel}|${o.prepared.data.to}`))) {
      try {
        p.contact = await this.contactByAddress(tx, p.prepared.data);
      } catch (err) {
        if (!(err instanceof AppError)) throw err;
        p.prepared.refusal = err;
      }
    }
  }

  /**
   * The conversation of each send (`Pending.conversation`), locked (a send whose named conversation
   * is not its contact's on its channel is refused, as `lockTouched` finds none): the contacts'
   * conversations ensured, one statement per channel, in contact order (one that another
   * transaction created after that statement began is read again alone), then every conversation of
   * the batch locked in id order (`InboundBatchRepository`, as the inbound batch). The touch comes
   * with the messages (`SendRepository.insertBatch`).
   */
  private async conversationsOf(tx: Tx, pending: Pending[], now: Date): Promise<void> {
    const ids = new Map<Pending, string>();
    const byChannel = new Map<MessagingSendData['channel'], Map<string, { organization_id: string; contact_id: string }>>();
    for (const p of pending) {
      const { channel, conversation_id: named, organization_id } = p.prepared.data;
      if (named) {
        if (isUuid(named)) ids.set(p, named);
        else p.prepared.refusal = new AppError(ErrorCode.NotFound, 'conversation not found');
      } else {
        const contacts = byChannel.get(channel) ?? new Map<string, { organization_id: string; contact_id: string }>();
        contacts.set(p.contact!.id, { organization_id, contact_id: p.contact!.id });
        byChannel.set(channel, contacts);
      }
    }
    for (const channel of [...byChannel.keys()].sort()) {
      const contacts = [...byChannel.get(channel)!.values()].sort(byKey((c) => c.contact_id));
      const ensured = await this.batchRepository.ensureConversations(tx, contacts, channel, now);
      for (const c of contacts) if (!ensured.has(c.contact_id)) ensured.set(c.contact_id, await this.conversations.ensureConversation(tx, c.organization_id, c.contact_id, channel, now));
      for (const p of pending) if (!p.prepared.data.conversation_id && p.prepared.data.channel === channel) ids.set(p, ensured.get(p.contact!.id)!.id);
    }
    const locked = await this.batchRepository.lockConversations(tx, [...new Set(ids.values())]);
    for (const [p, id] of ids) {
      const row = locked.get(id);
      const { organization_id, channel } = p.prepared.data;
      if (row && row.organization_id === organization_id && row.contact_id === p.contact!.id && row.channel === channel) p.conversation = row;
      else p.prepared.refusal = new AppError(ErrorCode.NotFound, 'conversation not found');
    }
  }

  /**
   * A command of a prepared batch, when the batch wrote or refused its key: the writer announces
   * what was written for it (or throws its refusal), a later command of the key answers the key's
   * message. Undefined when the batch left the command to `sendInTx` alone (its key's writer was
   * refused, or it was not prepared).
   */
  private async fromBatch(tx: Tx, batch: SendBatch, data: MessagingSendData, options: SendOptions): Promise<SendWrite | undefined> {
    const key = keyOfSend(data);
    const writer = batch.writers.get(key);
    if (writer && !writer.taken && isDeepStrictEqual(writer.data, data)) {
      writer.taken = true;
      if (!writer.rows) throw writer.refusal;
      const answer = await this.announce(tx, data, writer.rows, options, batch.now);
      batch.messages.set(key, answer.message);
      return answer;
    }
    const stored = batch.messages.get(key);
    if (!stored) return undefined;
    if (options.sameRequestOnly) refuseDifferentRequest(stored, data);
    return { message: stored, created: false };
  }

  /**
   * The rest of a send once its rows are written: the `instance opened` feed item, the events (one
   * outbox insert per transaction, at its commit: the enqueue command, or the refusal of an
   * opted-out contact's or an unsupported channel's send; an operator's human_message_sent) and
   * the `message queued` feed item. A key whose row a concurrent send wrote answers that row.
   */
  private async announce(tx: Tx, data: MessagingSendData, rows: SendRows, options: SendOptions, now: Date): Promise<SendWrite> {
    const { contact, address, payload, conversation, instance, opened, message } = rows;
    if (!instance) throw new AppError(ErrorCode.ServiceUnavailable, 'instance creation raced; retry');
    if (opened) await this.stream.append(tx, data.organization_id, MessagingEvents.InstanceOpened, instanceData(instance, conversation.contact_id, null, null));
    if (!message) {
      // A concurrent send with the same key won the unique index: answer with its row.
      const winner = await this.messages.findByIdempotencyKey(tx, data.organization_id, data.idempotency_key);
      if (!winner) throw new AppError(ErrorCode.ServiceUnavailable, 'send raced; retry');
      if (options.sameRequestOnly) refuseDifferentRequest(winner, data);
      return { message: winner, created: false };
    }

    // Statement 4: every outbox row of the send in one insert.
    const stored = STORED_CHANNELS.has(data.channel);
    const events: OutgoingMessage[] = [];
    if (DISPATCHED_CHANNELS.has(data.channel) && contact.opted_out_at) {
      // "Stop means stop on every channel" (seed 003 §4.7, §5): the dispatcher's list holds the
      // addresses the contact had when it opted out; an address added or changed since is not on
      // it, so the person's own opt-out stops the send here, before anything is queued.
      events.push(await this.refuse(tx, data, message, ErrorCode.OptedOut, 'the contact opted out', now));
    } else if (DISPATCHED_CHANNELS.has(data.channel)) {
      const enqueue: OutboxEnqueueData = {
        organization_id: data.organization_id,
        channel: data.channel as OutboxEnqueueData['channel'],
        sender_id: data.outbox_sender_id ?? null,
        to: address!,
        idempotency_key: data.idempotency_key,
        payload: payload as OutboxPayload,
        log_context: { message_id: message.id, conversation_id: conversation.id, contact_id: contact.id, requester: data.requester, ...(data.context ?? {}) },
        requester: 'messaging',
        // Only an automation's send stops on a reply: an operator's, a system reply or a notification is never held.
        ...(data.stop_on_reply === true && !NEVER_HELD.has(data.sender_type) && !data.notification_delivery_id ? { stop_on_reply: true } : {}),
      };
      events.push({ event_id: `messaging.send:${message.id}`, type: OutboxCommands.Enqueue, organization_id: data.organization_id, data: enqueue });
    } else if (stored) {
      events.push({ event_id: `messaging.message.sent:${message.id}`, type: MessagingEvents.MessageSent, organization_id: data.organization_id, data: outcomeData(message, 'sent') });
    } else {
      // No adapter for this channel yet (sms): the send fails before it was ever queued.
      events.push(await this.refuse(tx, data, message, ErrorCode.UnsupportedChannel, `no sender for ${data.channel}`, now));
    }
    if (data.sender_type === 'operator') {
      events.push({
        event_id: `messaging.human_message_sent:${message.id}`,
        type: MessagingEvents.HumanMessageSent,
        organization_id: data.organization_id,
        data: { message_id: message.id, conversation_id: conversation.id, contact_id: contact.id, channel: data.channel, operator_id: data.sender_id ?? null },
      });
    }
    await tx.publish(events);
    await this.stream.append(tx, data.organization_id, MessagingEvents.MessageQueued, toMessageView(message));
    this.sends.inc({ channel: data.channel, outcome: message.status });
    return { message, created: true };
  }

  /** A send written but never queued: the message fails at the enqueue stage with `code`; answers the requester's `messaging.message.failed` for the send's outbox insert. */
  private async refuse(tx: Tx, data: MessagingSendData, message: MessageRow, code: ErrorCode, reason: string, now: Date): Promise<OutgoingMessage> {
    await this.messages.setStatus(tx, message.id, 'failed', 'failed', now, { code, message: reason });
    message.status = 'failed';
    message.error_code = code;
    this.logEnqueueFailure(data, new AppError(code, reason));
    return {
      event_id: `messaging.message.failed:${message.id}`,
      type: MessagingEvents.MessageFailed,
      organization_id: data.organization_id,
      data: { ...outcomeData(message, 'failed'), failure_stage: 'enqueue', error_code: code },
    };
  }

  private async contactByAddress(tx: Tx, data: MessagingSendData): Promise<ContactRow> {
    if (data.to) return this.contacts.findOrCreateByAddress(tx, data.organization_id, data.channel, data.to, null);
    throw new AppError(ErrorCode.ValidationFailed, 'give contact_id or to', { field: 'contact_id' });
  }
}

/**
 * Log level of a send that was never queued: `info` for a do-not-contact refusal (the platform
 * doing its job), `warn` for a refusal of the caller's input (any 4xx code: a bad payload, an
 * unknown conversation), `error` only for our own failures (5xx codes and anything not an AppError).
 */
export function enqueueFailureLevel(err: unknown): 'info' | 'warn' | 'error' {
  if (!(err instanceof AppError)) return 'error';
  if (isDoNotContact(err.code)) return 'info';
  return httpStatusOf(err.code) < 500 ? 'warn' : 'error';
}

/**
 * The log level of a send that messaging queued and that then failed, refused by the dispatcher at
 * its enqueue or after (`messaging.send_enqueue_failed`, `messaging.send_delivery_failed`):
 * `info` for a do-not-contact refusal, `warn` for a refusal by one of our own rules (an error code
 * of ours that is no server fault: the mailbox's daily prospect cap, an invalid payload), `error`
 * for the rest (provider failures, our own faults). A refusal by policy is the platform doing its
 * job; at `error` a burst of them (a cap reached under load) paged like an outage.
 */
export function failedSendLevel(code: string | null | undefined): 'info' | 'warn' | 'error' {
  if (isDoNotContact(code)) return 'info';
  return code && httpStatusOf(code) < 500 ? 'warn' : 'error';
}

/** Codes that mean the person must not be written to (suppressed address, opted-out contact). */
export function isDoNotContact(code: string | null | undefined): boolean {
  // `suppressed` is the dispatcher's gate code (its classification, not one of our error codes).
  return code === 'suppressed' || code === ErrorCode.OptedOut;
}

/** The `messaging.message.*` outcome data of a message row. */
export function outcomeData(m: MessageRow, status: MessageOutcomeData['status']): MessageOutcomeData {
  return {
    message_id: m.id,
    conversation_id: m.conversation_id,
    contact_id: m.contact_id,
    channel: m.channel,
    idempotency_key: m.idempotency_key ?? '',
    requester: m.requester ?? '',
    status,
    provider_message_id: m.external_id,
    notification_delivery_id: m.notification_delivery_id,
    context: m.context ?? undefined,
  };
}

function addressOf(contact: ContactRow, channel: string): string | null {
  if (channel === 'whatsapp' || channel === 'sms') return contact.phone;
  if (channel === 'email') return contact.email;
  // The member id when known; else the profile URL, which the dispatcher resolves to a member id (Unipile).
  if (channel === 'linkedin') return contact.linkedin_provider_id ?? contact.linkedin_url;
  return null;
}

/** @throws AppError not_found for no contact or an erased one */
function liveContact(contact: ContactRow | null): ContactRow {
  if (!contact || contact.erased_at) throw new AppError(ErrorCode.NotFound, 'contact not found');
  return contact;
}

/**
 * The address a send goes to: the one it gives along with its contact, else the contact's own on
 * the channel (null for a stored channel, which needs none).
 * @throws AppError validation_failed when a dispatched channel has no address
 */
function recipientOf(data: MessagingSendData, contact: ContactRow): string | null {
  // A caller that names the contact and the address gets that address, never a newer one.
  const address = data.contact_id && data.to ? data.to : addressOf(contact, data.channel);
  if (!address && !STORED_CHANNELS.has(data.channel)) {
    throw new AppError(ErrorCode.ValidationFailed, `the contact has no address for ${data.channel}`, { field: 'contact_id' });
  }
  return address;
}

/** The message row of a send, without its instance. */
function newSendOf(data: MessagingSendData, payload: SendPayload, conversationId: string, contactId: string, now: Date): NewSend {
  const stored = STORED_CHANNELS.has(data.channel);
  return {
    organization_id: data.organization_id,
    conversation_id: conversationId,
    contact_id: contactId,
    channel: data.channel,
    direction: 'outbound',
    sender_type: data.sender_type,
    sender_id: data.sender_id ?? null,
    message_type: payload.type,
    body: data.text ?? data.media?.caption ?? (data.template ? `[template ${data.template.name}]` : null),
    subject: data.subject ?? null,
    status: stored ? 'sent' : 'queued',
    in_reply_to: data.reply_to_external_id ?? null,
    payload,
    idempotency_key: data.idempotency_key,
    requester: data.requester,
    context: data.context ?? null,
    notification_delivery_id: data.notification_delivery_id ?? null,
    created_at: now,
    sent_at: stored ? now : null,
  };
}

/**
 * Keeps the sends not refused yet and maps them with `next`; a send whose `next` throws is refused
 * with that error (its handler throws it) and left out.
 */
function notRefused(pending: Pending[], next: (p: Pending) => Pending): Pending[] {
  return pending.flatMap((p) => {
    if (p.prepared.refusal !== undefined) return [];
    try {
      return [next(p)];
    } catch (err) {
      p.prepared.refusal = err;
      return [];
    }
  });
}

/** @throws AppError validation_failed naming the field */
function validate(data: MessagingSendData): void {
  if (!data || typeof data !== 'object') throw new AppError(ErrorCode.ValidationFailed, 'a send needs a body');
  requireString(data.organization_id, 'organization_id');
  requireString(data.idempotency_key, 'idempotency_key');
  if (codePointLength(data.idempotency_key) > MAX_KEY_LENGTH) throw new AppError(ErrorCode.ValidationFailed, `idempotency_key must be at most ${MAX_KEY_LENGTH} characters`, { field: 'idempotency_key', max: MAX_KEY_LENGTH });
  if (!MESSAGING_CHANNELS.includes(data.channel)) throw new AppError(ErrorCode.ValidationFailed, `channel must be one of ${MESSAGING_CHANNELS.join(', ')}`, { field: 'channel' });
  requireString(data.sender_type, 'sender_type');
  requireString(data.requester, 'requester');
  const kinds = [data.text !== undefined, data.template !== undefined, data.media !== undefined, data.interactive !== undefined].filter(Boolean).length;
  if (kinds !== 1) throw new AppError(ErrorCode.ValidationFailed, 'give exactly one of text, template, media, interactive', { field: 'text' });
  // The channel's own limit (libs/contracts CHANNEL_TEXT_MAX, code points): WhatsApp's 4096 is not email's.
  const max = CHANNEL_TEXT_MAX[data.channel];
  if (data.text !== undefined && (typeof data.text !== 'string' || data.text.trim() === '' || codePointLength(data.text) > max)) {
    throw new AppError(ErrorCode.ValidationFailed, `text must be 1 to ${max} characters on ${data.channel}`, { field: 'text', max });
  }
}

/**
 * Runs the dispatcher's payload rules (`validateOutboxPayload`, libs/contracts) before anything is
 * written: a payload the dispatcher would refuse is an enqueue failure, thrown at the call site
 * (seed 004 "Enqueue before wire"), instead of a `queued` answer that fails later.
 * @throws AppError invalid_payload with `details.errors`, one line per problem
 */
function refuseUndispatchable(channel: OutboxChannel, payload: OutboxPayload, idempotencyKey: string): void {
  const problems = validateOutboxPayload(channel, payload, idempotencyKey);
  if (problems.length) throw new AppError(ErrorCode.InvalidPayload, `the ${channel} payload is not valid: ${problems.join('; ')}`, { errors: problems });
}

/** How a caller wants a repeated idempotency key treated. */
export interface SendOptions {
  /**
   * A key already used for a different message (another conversation, channel or content) is an
   * error rather than an answer with the first message: for REST clients, whose key stands for
   * one request (the operator route). Bus callers derive keys from their cause and keep the default.
   */
  sameRequestOnly?: boolean;
}

/**
 * @throws AppError idempotency_conflict when `existing` was written for another request than `data`
 */
function refuseDifferentRequest(existing: MessageRow, data: MessagingSendData): void {
  const normalized = (value: unknown) => JSON.parse(JSON.stringify(value ?? null)) as unknown;
  const same = existing.channel === data.channel && (!data.conversation_id || existing.conversation_id === data.conversation_id) && isDeepStrictEqual(normalized(existing.payload), normalized(payloadOf(data)));
  if (!same) {
    throw new AppError(ErrorCode.IdempotencyConflict, 'this idempotency_key was already used for a different message', { field: 'idempotency_key', message_id: existing.id });
  }
}

/**
 * The payload of a send, held to the dispatcher's rules when it goes through the dispatcher.
 * @throws AppError invalid_payload (`refuseUndispatchable`)
 */
function dispatchablePayloadOf(data: MessagingSendData): SendPayload {
  const payload = payloadOf(data);
  if (DISPATCHED_CHANNELS.has(data.channel)) refuseUndispatchable(data.channel as OutboxChannel, payload, data.idempotency_key);
  return payload;
}

/** The dispatcher payload of a send (outbox.ts shapes). */
function payloadOf(data: MessagingSendData): SendPayload {
  const payload: SendPayload = data.template
    ? { type: 'template', name: data.template.name, language: data.template.language, components: data.template.components as never }
    : data.media
      ? { type: 'media', ...data.media }
      : data.interactive
        ? { type: 'interactive', interactive: data.interactive as never }
        : { type: 'text', body: data.text! };
  // WhatsApp quotes the wamid on every message type Meta allows it on (its contextual replies);
  // email replies in the thread of the Nylas message (seed 003 §4.6), text only.
  if (data.reply_to_external_id && (data.channel === 'whatsapp' || (data.channel === 'email' && payload.type === 'text'))) (payload as { reply_to?: string }).reply_to = data.reply_to_external_id;
  if (data.subject && payload.type === 'text') payload.subject = data.subject;
  return payload;
}
