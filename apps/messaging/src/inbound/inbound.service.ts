import { Inject, Injectable } from '@nestjs/common';
import { Counter, Histogram } from 'prom-client';
import {
  type AbuseCheckData,
  type EmailHeadersQuery,
  type EmailHeadersView,
  type MessageReceivedData,
  MessagingEvents,
  type MessagingChannel,
  type MessagingInboundRecordData,
  type OutgoingMessage,
  OutboxAccountRpc,
  OutboxCommands,
  type OutboxSuppressionAddResult,
  OutreachDispatcherRpc,
  type OutboxEnqueueData,
  type WhatsAppInboundBatch,
} from '@touchpoint/contracts';
import type { Tx } from '@touchpoint/database';
import { AppError, ErrorCode } from '@touchpoint/errors';
import { type Logger, METRIC_PREFIX, Metrics } from '@touchpoint/observability';
import { toPhoneKey, toRecipientKey } from '@touchpoint/phone';
import { APP_CONFIG, LOGGER, RpcClient, UnitOfWork } from '@touchpoint/runtime';
import { type EmailHeader, type InboundJudgement, judgeInbound, truncateText } from '@touchpoint/text';
import { Clock } from '@touchpoint/time';
import type { ContactRow } from '../contacts/contacts.repository.js';
import { ContactsRepository } from '../contacts/contacts.repository.js';
import { ContactsService } from '../contacts/contacts.service.js';
import { type ConversationRow, ConversationsRepository, type InstanceRow } from '../conversations/conversations.repository.js';
import { InstancesService } from '../conversations/instances.service.js';
import { MessagesRepository, type NewAttachment, toMessageView } from '../messages/messages.repository.js';
import type { MessagingConfig } from '../messaging.config.js';
import { AbuseGuardService, type GuardVerdict } from '../restrictions/abuse-guard.service.js';
import { SendService } from '../sending/send.service.js';
import { SendersService } from '../senders/senders.service.js';
import { StreamRepository } from '../stream/stream.repository.js';
import { type InboundReceiptRow, InboundReceiptsRepository, type NewInboundReceipt } from './inbound-receipts.repository.js';
import { parseWhatsAppMessage, type ParsedWhatsAppMessage, unusableWhatsAppMessage } from './whatsapp-message.js';

/** How many rollovers one message may go through before it is stored anyway (a cap of 0 would loop). */
const MAX_ROLLOVERS_PER_MESSAGE = 3;

/**
 * The header read of an inbound email (seed 003 §4.7 "Auto-reply": the webhook body has no
 * headers, one Nylas GET with `fields=include_headers` has them). It runs before the gateway's
 * acknowledgement, inside its RPC deadline (RPC_TIMEOUT_MS, 5 s by default): at most 3 tries of
 * 800 ms, 100 ms then 300 ms apart, 2.8 s at worst. Then the message is judged without them.
 */
export const EMAIL_HEADER_READ_ATTEMPTS = 3;

/**
 * Deadline of the dispatcher call that puts an opt-out's address on the do-not-contact list before
 * the webhook is acknowledged, ms. With the header read above it stays inside the gateway's 5 s.
 */
export const OPT_OUT_SUPPRESSION_TIMEOUT_MS = 1500;

/** Channels whose addresses the dispatcher's do-not-contact list keys. */
const SUPPRESSIBLE_CHANNELS = new Set(['whatsapp', 'email', 'linkedin']);
export const EMAIL_HEADER_READ_TIMEOUT_MS = 800;
const EMAIL_HEADER_READ_BACKOFF_MS = [100, 300];

/** What became of the messages of one webhook change. */
export interface InboundResult {
  stored: number;
  duplicates: number;
  denied: number;
  ignored: number;
}

/** Profile names by wa_id from a change's `contacts` (any other shape: none). */
function contactNames(contacts: unknown): Map<string, string | null> {
  const names = new Map<string, string | null>();
  if (!Array.isArray(contacts)) return names;
  for (const c of contacts as { wa_id?: unknown; profile?: { name?: unknown } }[]) {
    if (c && typeof c.wa_id === 'string') names.set(c.wa_id, typeof c.profile?.name === 'string' ? c.profile.name : null);
  }
  return names;
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
 * What the receipt worker already knows about one receipt (`InboundService.hintsFor`): `known` — its
 * provider id is stored; `open` — the sender's contact, conversation and active instance (null: none
 * yet). An absent field is read by the pipeline itself.
 */
export interface ReceiptHints {
  known?: boolean;
  open?: { contact: ContactRow; conversation: ConversationRow; instance: InstanceRow } | null;
}

/** An inbound message on its way to storage, whatever the channel. */
interface InboundMessage {
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
 * Inbound messages (seed 004 "Scenario 2"): store once per provider id, find or
 * create the contact, conversation and instance, ask abuse (rolling over on the instance verdict),
 * mark read through the outbox, and emit `messaging.message.received`. WhatsApp messages arrive as
 * receipts (`accept`, one insert, then the gateway answers) and are processed by the receipt
 * worker; the other channels' `record` RPC runs the pipeline before it answers.
 */
@Injectable()
export class InboundService {
  private readonly received: Counter<'channel' | 'outcome'>;
  private readonly seconds: Histogram<'channel'>;
  private readonly acceptedListeners: (() => void)[] = [];
  /** Plain reads outside a transaction (one round trip, any pool connection). */
  private readonly reader = { query: (sql: string, params?: unknown[]) => this.uow.dataSource.query(sql, params) } as unknown as Tx;

  constructor(
    private readonly uow: UnitOfWork,
    private readonly contacts: ContactsService,
    private readonly contactsRepository: ContactsRepository,
    private readonly conversations: ConversationsRepository,
    private readonly instances: InstancesService,
    private readonly messages: MessagesRepository,
    private readonly guard: AbuseGuardService,
    private readonly sends: SendService,
    private readonly senders: SendersService,
    private readonly stream: StreamRepository,
    private readonly receipts: InboundReceiptsRepository,
    private readonly rpc: RpcClient,
    private readonly clock: Clock,
    metrics: Metrics,
    @Inject(APP_CONFIG) private readonly config: MessagingConfig,
    @Inject(LOGGER) private readonly logger: Logger,
  ) {
    this.received = new Counter({ name: `${METRIC_PREFIX}messaging_inbound_total`, help: 'Inbound messages by channel and outcome (accepted as a receipt, stored, duplicate, denied, ignored)', labelNames: ['channel', 'outcome'], registers: [metrics.registry] });
    this.seconds = new Histogram({
      name: `${METRIC_PREFIX}messaging_inbound_seconds`,
      help: 'Time to take one inbound message from the RPC to its commit, seconds',
      labelNames: ['channel'],
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
      registers: [metrics.registry],
    });
  }

  /**
   * The `messaging.inbound.whatsapp` RPC (the gateway's Meta ingress): stores each message of one
   * webhook change as an inbound receipt, in one statement, and answers; the receipt worker does
   * the rest (`processReceipt`). So the gateway's 2xx means "durably stored", and a failure after
   * that point (abuse unreachable with nothing in the read model, a lost database) is retried here
   * rather than by Meta. A message without an id or a sender, or from a number that is not a
   * phone, is ignored (a redelivery would not change it).
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
      const fresh = await this.receipts.insert(receipts);
      result.accepted = fresh.size;
      result.duplicates = receipts.length - fresh.size;
    } catch (err) {
      this.logger.error({ event: 'messaging.inbound_receipt_failed', organization_id: owner.organization_id, count: receipts.length, err: (err as Error).message }, 'inbound receipts not stored');
      throw new AppError(ErrorCode.ServiceUnavailable, 'the message could not be stored; retry');
    }
    this.received.inc({ channel: 'whatsapp', outcome: 'accepted' }, result.accepted);
    if (result.duplicates) this.received.inc({ channel: 'whatsapp', outcome: 'duplicate' }, result.duplicates);
    if (result.accepted) for (const listener of this.acceptedListeners) listener();
    // The receipt worker applies the opt-out to the contact (every address, followups, outreach)
    // later, behind whatever is waiting; the number it came from is suppressed before we answer.
    for (const r of receipts) {
      const parsed = parseWhatsAppMessage(r.message as WhatsAppInboundBatch['messages'][number]);
      if (judgeInbound({ channel: 'whatsapp', text: parsed.text, textMayOptOut: parsed.typedText }).optOut) await this.optOutNow(owner.organization_id, 'whatsapp', parsed.from);
    }
    return result;
  }

  /** Registers what runs after `accept` stored new receipts (the worker's wake-up). */
  onAccepted(listener: () => void): void {
    this.acceptedListeners.push(listener);
  }

  /**
   * Processes one inbound receipt through the whole pipeline (`take`).
   * @throws AppError service_unavailable (or the pipeline's own code) when it could not be stored or judged; the worker retries
   */
  async processReceipt(r: InboundReceiptRow, hints: ReceiptHints = {}): Promise<'stored' | 'duplicate' | 'denied' | 'ignored'> {
    if (r.channel !== 'whatsapp') throw new AppError(ErrorCode.Internal, `no receipt processing for channel ${r.channel}`);
    if ((r.message as { type?: unknown }).type === 'system') return this.systemMessage(r.organization_id, r.message as unknown as WhatsAppInboundBatch['messages'][number]);
    return this.take(this.fromWhatsApp(r.message as unknown as WhatsAppInboundBatch['messages'][number], r.organization_id, r.sender_id), r.contact_name, true, hints);
  }

  /**
   * What two queries tell about a whole batch of receipts, instead of two per message: which
   * provider ids are stored already, and the contact, conversation and active instance of each
   * sender's first receipt in the batch (its later ones read their own: the first may roll over).
   * @param batch receipts in arrival order
   * @returns hints by receipt id, for `processReceipt`
   */
  async hintsFor(batch: InboundReceiptRow[]): Promise<Map<string, ReceiptHints>> {
    const hints = new Map<string, ReceiptHints>();
    if (batch.length === 0) return hints;
    const stored = await this.reader.query<{ organization_id: string; external_id: string }>(
      `SELECT organization_id, external_id FROM messages
        WHERE channel = 'whatsapp' AND external_id IS NOT NULL
          AND (organization_id, external_id) IN (SELECT * FROM unnest($1::text[], $2::text[]))`,
      [batch.map((r) => r.organization_id), batch.map((r) => r.external_id)],
    );
    const storedIds = new Set(stored.map((r) => `${r.organization_id}|${r.external_id}`));
    const firstOfSender = new Map<string, InboundReceiptRow>();
    for (const r of batch) {
      const key = toPhoneKey(String(r.message.from ?? ''));
      if (key && !firstOfSender.has(`${r.organization_id}|${key}`)) firstOfSender.set(`${r.organization_id}|${key}`, r);
    }
    const entries = [...firstOfSender.keys()].map((k) => k.split('|') as [string, string]);
    const open = await this.reader.query<{ organization_id: string; phone_key: string; contact: ContactRow; conversation: ConversationRow; instance: InstanceRow }>(
      `SELECT DISTINCT ON (ct.organization_id, ct.phone_key) ct.organization_id, ct.phone_key, to_jsonb(ct) AS contact, to_jsonb(cv) AS conversation, to_jsonb(i) AS instance
         FROM contacts ct
         JOIN conversations cv ON cv.contact_id = ct.id AND cv.channel = 'whatsapp' AND cv.organization_id = ct.organization_id
         JOIN conversation_instances i ON i.conversation_id = cv.id AND i.status = 'active'
        WHERE (ct.organization_id, ct.phone_key) IN (SELECT * FROM unnest($1::text[], $2::text[])) AND ct.erased_at IS NULL
        ORDER BY ct.organization_id, ct.phone_key, (ct.kind = 'crm') DESC, ct.created_at`,
      [entries.map((e) => e[0]), entries.map((e) => e[1])],
    );
    const openBySender = new Map(open.map((o) => [`${o.organization_id}|${o.phone_key}`, { contact: o.contact, conversation: o.conversation, instance: o.instance }]));
    for (const r of batch) hints.set(r.id, { known: storedIds.has(`${r.organization_id}|${r.external_id}`) });
    for (const [sender, r] of firstOfSender) hints.get(r.id)!.open = openBySender.get(sender) ?? null;
    return hints;
  }

  /**
   * The messages of one Meta webhook change, processed at once in order (what the receipt worker
   * does one receipt at a time); tests and tools use it to run the pipeline without the worker.
   * @throws AppError service_unavailable when a message could not be stored or judged
   */
  async whatsapp(batch: WhatsAppInboundBatch & { organization_id?: string }): Promise<InboundResult> {
    const result: InboundResult = { stored: 0, duplicates: 0, denied: 0, ignored: 0 };
    const owner = await this.ownerOf(batch, result);
    if (!owner) return result;
    const names = contactNames(batch.contacts);
    for (const raw of batch.messages) {
      if (unusableWhatsAppMessage(raw)) {
        result.ignored++;
        continue;
      }
      const outcome = raw.type === 'system' ? await this.systemMessage(owner.organization_id, raw) : await this.take(this.fromWhatsApp(raw, owner.organization_id, owner.sender_id), names.get(raw.from) ?? null, true);
      result[outcome === 'stored' ? 'stored' : outcome === 'duplicate' ? 'duplicates' : outcome === 'denied' ? 'denied' : 'ignored']++;
    }
    return result;
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

  /** The organization and sender owning the batch's number, or null (counted ignored) when nobody does. */
  private async ownerOf(batch: (WhatsAppInboundBatch & { organization_id?: string }) | null | undefined, result: { ignored: number }): Promise<{ organization_id: string; sender_id: string | null } | null> {
    if (!batch || !Array.isArray(batch.messages) || batch.messages.length === 0) return null;
    const owner = batch.organization_id
      ? { organization_id: batch.organization_id, sender_id: null as string | null }
      : batch.phone_number_id
        ? await this.senders.resolve(batch.phone_number_id)
        : null;
    if (!owner?.organization_id) {
      // Nobody owns this number here: storing is impossible and a redelivery will not change that.
      this.logger.warn({ event: 'messaging.inbound_unknown_number', phone_number_id: batch.phone_number_id, count: batch.messages.length }, 'inbound for an unregistered number ignored');
      result.ignored = batch.messages.length;
      this.received.inc({ channel: 'whatsapp', outcome: 'ignored' }, batch.messages.length);
      return null;
    }
    return owner;
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
   * The `messaging.inbound.record` RPC: an inbound message of email, LinkedIn, SMS or web. An email
   * that came without headers has them read first with the mailbox it arrived on (`sender_id`,
   * `readEmailHeaders`), so the verdict sees them; a redelivery of a stored message reads nothing.
   * Without headers and without a mailbox, or when the read failed, the verdict is uncertain
   * (libs/text `judgeInbound`).
   */
  async record(data: MessagingInboundRecordData): Promise<{ message_id: string | null; duplicate: boolean }> {
    for (const f of ['organization_id', 'channel', 'from', 'external_id'] as const) {
      if (typeof data?.[f] !== 'string' || data[f].trim() === '') throw new AppError(ErrorCode.ValidationFailed, `${f} is required`, { field: f });
    }
    if (data.channel === ('whatsapp' as string)) throw new AppError(ErrorCode.ValidationFailed, 'WhatsApp messages come through messaging.inbound.whatsapp', { field: 'channel' });
    let headers: EmailHeader[] | null = Array.isArray(data.headers) ? data.headers : null;
    let subject = data.subject ?? null;
    let headersUnreadable = false;
    if (data.channel === 'email' && !headers) {
      const mailbox = typeof data.sender_id === 'string' && data.sender_id !== '' ? data.sender_id : null;
      // No mailbox named: nobody can read its headers, so the verdict is made without them.
      if (!mailbox) headersUnreadable = true;
      else if (!(await this.messages.existsExternal(this.reader, data.organization_id, 'email', data.external_id))) {
        const read = await this.readEmailHeaders(data.organization_id, mailbox, data.external_id);
        if (read) {
          headers = read.headers;
          subject = subject ?? read.subject;
        } else headersUnreadable = true;
      }
    }
    const outcome = await this.take(
      {
        organizationId: data.organization_id,
        channel: data.channel,
        externalId: data.external_id,
        from: data.from,
        text: data.text ?? null,
        subject,
        messageType: data.channel === 'email' ? 'email' : 'text',
        inReplyTo: data.in_reply_to ?? null,
        threadId: data.thread_id ?? null,
        headers,
        attachments: [],
        sentAt: data.received_at ? new Date(data.received_at) : this.clock.now(),
        judgement: judgeInbound({ channel: data.channel, text: data.text ?? null, subject, headers, headersUnreadable }),
      },
      data.from_name ?? null,
      false,
    );
    const row = await this.uow.run((tx) => this.messages.findByExternalId(tx, data.organization_id, data.channel, data.external_id));
    // Stored (or stored before: a redelivery retries a suppression that failed last time).
    if (row?.opt_out) await this.optOutNow(data.organization_id, data.channel, data.from);
    return { message_id: row?.id ?? null, duplicate: outcome === 'duplicate' };
  }

  /**
   * What an opt-out must have done by the time its webhook is acknowledged (DESIGN §5.3; seed 003
   * "stop means stop on every channel"): the contact it came from is marked opted out, so messaging
   * refuses any new send to it on any channel, and the address it came from and every address the
   * contact has are on the dispatcher's list, so nothing already queued to them starts its attempt.
   * The receipt worker still runs the whole stop later (events to followups and outreach); each
   * step here is idempotent with it.
   * @throws AppError service_unavailable (see `suppressNow`)
   */
  private async optOutNow(organizationId: string, channel: string, from: string): Promise<void> {
    const key = toRecipientKey(channel, from);
    const contact = !key
      ? null
      : await this.uow.run(async (tx) => {
          const found =
            channel === 'whatsapp'
              ? await this.contactsRepository.findByPhoneKey(tx, organizationId, key)
              : channel === 'email'
                ? await this.contactsRepository.findByEmailKey(tx, organizationId, key)
                : channel === 'linkedin'
                  ? await this.contactsRepository.findByLinkedinId(tx, organizationId, key)
                  : null;
          if (found) await this.contactsRepository.markOptedOut(tx, found.id, this.clock.now());
          return found;
        });
    const addresses = new Map<string, [string, string]>([[`${channel}|${from}`, [channel, from]]]);
    for (const [c, value] of [['whatsapp', contact?.phone], ['email', contact?.email], ['linkedin', contact?.linkedin_provider_id]] as const) {
      if (value) addresses.set(`${c}|${value}`, [c, value]);
    }
    for (const [c, value] of addresses.values()) await this.suppressNow(organizationId, c, value);
  }

  /**
   * Puts the address an opt-out came from on the dispatcher's do-not-contact list and waits until
   * it is committed (seed 003 "stop means stop"; DESIGN §5.3 the reply wins): from the moment the
   * webhook is acknowledged, nothing queued or sent later to that address starts a wire attempt.
   * @throws AppError service_unavailable when the dispatcher did not confirm (the provider redelivers;
   *   the stored message is a duplicate then and the suppression is asked again)
   */
  private async suppressNow(organizationId: string, channel: string, value: string): Promise<void> {
    if (!SUPPRESSIBLE_CHANNELS.has(channel) || !value) return;
    try {
      const added = await this.rpc.call<OutboxSuppressionAddResult>('outbox-dispatcher', OutboxAccountRpc.SuppressionAdd, { organization_id: organizationId, channel, value, reason: 'opt_out' }, OPT_OUT_SUPPRESSION_TIMEOUT_MS);
      if (added.created) this.logger.info({ event: 'messaging.opt_out_suppressed', organization_id: organizationId, channel, cancelled: added.cancelled_entry_ids.length }, 'opt-out address suppressed before the acknowledgement');
    } catch (err) {
      // An address the list cannot key (not a phone, not an email) has nothing to suppress.
      if (err instanceof AppError && (err.code === ErrorCode.InvalidRecipient || err.code === ErrorCode.ValidationFailed)) return;
      this.logger.error({ event: 'messaging.opt_out_suppression_failed', organization_id: organizationId, channel, err: (err as Error).message }, 'opt-out not yet in force at the dispatcher; asking the provider to redeliver');
      throw new AppError(ErrorCode.ServiceUnavailable, 'the opt-out could not be put in force yet; retry');
    }
  }

  /**
   * The headers of an inbound email, read through the dispatcher with the grant of the mailbox it
   * arrived on (another mailbox's grant answers 404). Retried (`EMAIL_HEADER_READ_ATTEMPTS`) unless
   * the mailbox is unknown; null when no try succeeded: the caller judges the message without them,
   * and `judgeInbound` marks that verdict uncertain.
   */
  private async readEmailHeaders(organizationId: string, senderId: string, externalId: string): Promise<EmailHeadersView | null> {
    const query: EmailHeadersQuery = { organization_id: organizationId, provider_message_id: externalId, sender_id: senderId };
    for (let attempt = 1; ; attempt++) {
      try {
        const view = await this.rpc.call<EmailHeadersView>('outbox-dispatcher', OutreachDispatcherRpc.EmailHeaders, query, EMAIL_HEADER_READ_TIMEOUT_MS);
        return { headers: Array.isArray(view?.headers) ? view.headers : [], subject: view?.subject ?? null };
      } catch (err) {
        const last = attempt >= EMAIL_HEADER_READ_ATTEMPTS || (err instanceof AppError && err.code === ErrorCode.SenderNotFound);
        this.logger.warn(
          { event: 'messaging.email_headers_unread', organization_id: organizationId, external_id: externalId, sender_id: senderId, attempt, final: last, err: (err as Error).message },
          last ? 'email headers not read; judged by the subject alone' : 'email headers not read; retrying',
        );
        if (last) return null;
        await new Promise((resolve) => setTimeout(resolve, EMAIL_HEADER_READ_BACKOFF_MS[attempt - 1] ?? 300));
      }
    }
  }

  /** One message through the pipeline; never half-stored (each write is one transaction). */
  private async take(m: InboundMessage, name: string | null, checkAbuse: boolean, hints: ReceiptHints = {}): Promise<'stored' | 'duplicate' | 'denied' | 'ignored'> {
    const end = this.seconds.startTimer({ channel: m.channel });
    try {
      // Plain reads outside a transaction: the common redelivery and known-contact cases cost one round trip each.
        const known = hints.known ?? (await this.messages.existsExternal(this.reader, m.organizationId, m.channel, m.externalId));
      if (known) {
        this.received.inc({ channel: m.channel, outcome: 'duplicate' });
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
        this.received.inc({ channel: m.channel, outcome: 'denied' });
        return 'denied';
      }
      const stored = await this.uow.run((tx) => this.store(tx, m, contact, conversation, verdict));
      this.received.inc({ channel: m.channel, outcome: stored ? 'stored' : 'duplicate' });
      return stored ? 'stored' : 'duplicate';
    } catch (err) {
      this.logger.error(
        { event: 'messaging.inbound_failed', organization_id: m.organizationId, channel: m.channel, external_id: m.externalId, code: err instanceof AppError ? err.code : undefined, err: (err as Error).message },
        'inbound message not stored',
      );
      if (err instanceof AppError && err.code !== ErrorCode.Internal) throw err;
      throw new AppError(ErrorCode.ServiceUnavailable, 'the message could not be stored; retry');
    } finally {
      end();
    }
  }

  /** The contact, conversation and active instance of a phone that has them all already (one query), or null. */
  private async findOpen(m: InboundMessage): Promise<{ contact: ContactRow; conversation: ConversationRow; instance: InstanceRow } | null> {
    if (m.channel !== 'whatsapp' && m.channel !== 'sms') return null;
    const key = toPhoneKey(m.from);
    if (!key) return null;
    const rows = await this.reader.query<{ contact: ContactRow; conversation: ConversationRow; instance: InstanceRow }>(
      `SELECT to_jsonb(ct) AS contact, to_jsonb(cv) AS conversation, to_jsonb(i) AS instance
         FROM contacts ct
         JOIN conversations cv ON cv.contact_id = ct.id AND cv.channel = $3 AND cv.organization_id = ct.organization_id
         JOIN conversation_instances i ON i.conversation_id = cv.id AND i.status = 'active'
        WHERE ct.organization_id = $1 AND ct.phone_key = $2 AND ct.erased_at IS NULL
        ORDER BY (ct.kind = 'crm') DESC, ct.created_at LIMIT 1`,
      [m.organizationId, key, m.channel],
    );
    return rows[0] ?? null;
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

    if (m.judgement.optOut) {
      await this.contactsRepository.markOptedOut(tx, contact.id, now);
      await tx.publish({ event_id: `messaging.contact.opted_out:${message.id}`, type: MessagingEvents.ContactOptedOut, organization_id: m.organizationId, data: { contact_id: contact.id, channel: m.channel, message_id: message.id } });
      // "Stop" means stop on every channel (seed 003): ask to suppress each address the contact has.
      const addresses: [string, string | null][] = [
        ['whatsapp', contact.phone],
        ['email', contact.email],
        ['linkedin', contact.linkedin_provider_id],
      ];
      for (const [channel, value] of addresses) {
        if (!value) continue;
        await tx.publish({
          event_id: `messaging.suppression.requested:${message.id}:${channel}`,
          type: MessagingEvents.SuppressionRequested,
          organization_id: m.organizationId,
          data: { contact_id: contact.id, channel, value, reason: 'opt_out' },
        });
      }
    }
    const published: OutgoingMessage[] = [];
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
      published.push({ event_id: `messaging.read_receipt:${m.organizationId}:${m.externalId}`, type: OutboxCommands.Enqueue, organization_id: m.organizationId, data: receipt as unknown as Record<string, unknown> });
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
    published.push({ event_id: `messaging.message.received:${message.id}`, type: MessagingEvents.MessageReceived, organization_id: m.organizationId, data: received as unknown as Record<string, unknown> });
    await tx.publish(published);
    await this.stream.append(tx, m.organizationId, MessagingEvents.MessageReceived, toMessageView(message, []) as unknown as Record<string, unknown>);

    if (verdict?.action?.action_type === 'warning') {
      await this.reply(tx, m, contact, conversation, 'abuse_warning', this.config.ABUSE_WARNING_REPLY);
    }
    return true;
  }

  /** A denied message is not stored; a blocked contact (or a fail-closed denial) gets the access-restricted reply. */
  private async deny(m: InboundMessage, contact: ContactRow, conversation: ConversationRow, verdict: GuardVerdict): Promise<void> {
    this.logger.warn(
      { event: 'messaging.inbound_denied', organization_id: m.organizationId, contact_id: contact.id, external_id: m.externalId, limit_type: verdict.limit_type, source: verdict.source, reset_at: verdict.reset_at },
      'inbound message denied',
    );
    const restricted = verdict.limit_type === 'blocked' || verdict.source === 'fail_closed';
    if (!restricted || m.channel !== 'whatsapp') return;
    await this.uow.run((tx) => this.reply(tx, m, contact, conversation, 'access_restricted', this.config.ACCESS_RESTRICTED_REPLY));
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
