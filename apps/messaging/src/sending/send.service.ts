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
import type { ContactRow } from '../contacts/contacts.repository.js';
import { ContactsService } from '../contacts/contacts.service.js';
import { type ConversationRow, ConversationsRepository } from '../conversations/conversations.repository.js';
import { instanceData } from '../conversations/instances.service.js';
import { type MessageRow, MessagesRepository, toMessageView } from '../messages/messages.repository.js';
import { StreamRepository } from '../stream/stream.repository.js';
import { SendRepository } from './send.repository.js';

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

/**
 * The shared send path (DESIGN §4): validates, writes the outbound message `queued` in
 * the conversation's active instance, and asks the dispatcher to send it with the caller's
 * idempotency key, all in one transaction. The same key twice is one message and one entry.
 * A send is four statements (`sendInTx`), a repeated key one.
 */
@Injectable()
export class SendService {
  private readonly sends: Counter<'channel' | 'outcome'>;

  constructor(
    private readonly uow: UnitOfWork,
    private readonly contacts: ContactsService,
    private readonly conversations: ConversationsRepository,
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
   * @throws AppError validation_failed, not_found, invalid_payload (`details.errors`: the
   *   dispatcher's own payload rules refuse it; nothing is written)
   */
  async sendInTx(tx: Tx, data: MessagingSendData, known?: { contact: ContactRow; conversation: ConversationRow }, options: SendOptions = {}): Promise<SendWrite> {
    validate(data);
    const now = this.clock.now();
    // Statement 1: the key's message and the named contact together (a repeated key reads no more).
    const byId = !known && data.contact_id ? data.contact_id : null;
    const start = await this.repository.start(tx, data.organization_id, data.idempotency_key, byId && isUuid(byId) ? byId : null);
    if (start.existing) {
      if (options.sameRequestOnly) refuseDifferentRequest(start.existing, data);
      return { message: start.existing, created: false };
    }
    const payload = payloadOf(data);
    if (DISPATCHED_CHANNELS.has(data.channel)) refuseUndispatchable(data.channel as OutboxChannel, payload, data.idempotency_key);

    const contact = known?.contact ?? (byId ? start.contact : await this.contactByAddress(tx, data));
    if (!contact || contact.erased_at) throw new AppError(ErrorCode.NotFound, 'contact not found');
    // A caller that names the contact and the address gets that address, never a newer one.
    const address = data.contact_id && data.to ? data.to : addressOf(contact, data.channel);
    if (!address && !STORED_CHANNELS.has(data.channel)) {
      throw new AppError(ErrorCode.ValidationFailed, `the contact has no address for ${data.channel}`, { field: 'contact_id' });
    }
    // Statement 2: the conversation's lock (every message writer takes it first), its touch, and
    // for a first send its row, in one.
    const named = known?.conversation.id ?? data.conversation_id;
    let conversation: ConversationRow | null;
    if (!named) conversation = await this.conversations.lockOrCreateTouched(tx, data.organization_id, contact.id, data.channel, now);
    else conversation = isUuid(named) ? await this.conversations.lockTouched(tx, data.organization_id, named, contact.id, data.channel, now) : null;
    if (!conversation) throw new AppError(ErrorCode.NotFound, 'conversation not found');

    // Statement 3: the active instance (locked, or opened) and the message.
    const stored = STORED_CHANNELS.has(data.channel);
    const { instance, opened, message } = await this.repository.insertInActiveInstance(tx, {
      organization_id: data.organization_id,
      conversation_id: conversation.id,
      contact_id: contact.id,
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
    });
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

/** The dispatcher payload of a send (outbox.ts shapes). */
function payloadOf(data: MessagingSendData): OutboxPayload & { subject?: string } {
  const payload: OutboxPayload & { subject?: string } = data.template
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
