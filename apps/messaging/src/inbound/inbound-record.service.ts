import { Inject, Injectable } from '@nestjs/common';
import { type EmailHeadersQuery, type EmailHeadersView, type MessagingInboundRecordData, OutreachDispatcherRpc } from '@touchpoint/contracts';
import { poolOf, type Queryable } from '@touchpoint/database';
import { AppError, ErrorCode } from '@touchpoint/errors';
import type { Logger } from '@touchpoint/observability';
import { LOGGER, RpcClient, UnitOfWork } from '@touchpoint/runtime';
import { type EmailHeader, judgeInbound } from '@touchpoint/text';
import { Clock } from '@touchpoint/time';
import { MessagesRepository } from '../messages/messages.repository.js';
import { InboundOptOutService } from './inbound-opt-out.service.js';
import { InboundService } from './inbound.service.js';

/**
 * The header read of an inbound email (seed 003 §4.7 "Auto-reply": the webhook body has no
 * headers, one Nylas GET with `fields=include_headers` has them). It runs before the gateway's
 * acknowledgement, inside its RPC deadline (RPC_TIMEOUT_MS, 5 s by default): at most 3 tries of
 * 800 ms, 100 ms then 300 ms apart, 2.8 s at worst. Then the message is judged without them.
 */
export const EMAIL_HEADER_READ_ATTEMPTS = 3;
export const EMAIL_HEADER_READ_TIMEOUT_MS = 800;
const EMAIL_HEADER_READ_BACKOFF_MS = [100, 300];

/**
 * The inbound messages of email, LinkedIn, SMS and web (`messaging.inbound.record`): each is judged
 * here, then taken by the message pipeline (`InboundService.take`) before the RPC answers.
 */
@Injectable()
export class InboundRecordService {
  /** Plain reads outside a transaction (one round trip, any pool connection). */
  /** Reads that need no transaction run on the pool. */
  private get reader(): Queryable {
    return poolOf(this.uow.dataSource);
  }

  constructor(
    private readonly uow: UnitOfWork,
    private readonly inbound: InboundService,
    private readonly messages: MessagesRepository,
    private readonly optOut: InboundOptOutService,
    private readonly rpc: RpcClient,
    private readonly clock: Clock,
    @Inject(LOGGER) private readonly logger: Logger,
  ) {}

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
    const outcome = await this.inbound.take(
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
    if (row?.opt_out) await this.optOut.optOutNow(data.organization_id, data.channel, data.from);
    return { message_id: row?.id ?? null, duplicate: outcome === 'duplicate' };
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
        const view = await this.rpc.call('outbox-dispatcher', OutreachDispatcherRpc.EmailHeaders, query, EMAIL_HEADER_READ_TIMEOUT_MS);
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
}
