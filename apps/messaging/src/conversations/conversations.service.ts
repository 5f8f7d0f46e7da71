import { Injectable } from '@nestjs/common';
import { type ConversationResolvedData, type ConversationStatus, type ConversationView, MessagingEvents, type MessagingPage, type MessagingSendResult, type MessageView, type MessagingSendContent, OutboxAccountRpc, type OutboxProspectCapCheckResult } from '@touchpoint/contracts';
import { AppError, ErrorCode } from '@touchpoint/errors';
import { RpcClient, UnitOfWork } from '@touchpoint/runtime';
import { Clock } from '@touchpoint/time';
import { ContactsRepository } from '../contacts/contacts.repository.js';
import { MessagesRepository } from '../messages/messages.repository.js';
import { SendService } from '../sending/send.service.js';
import { decodeCursor, encodeCursor, pageSize, requireId, requireString } from '@touchpoint/database';
import { StreamRepository } from '../stream/stream.repository.js';
import { ConversationsRepository, toConversationView } from './conversations.repository.js';

/** Deadline of the prospect-cap check of an interactive email, ms (ours: short; the wire check stays). */
const PROSPECT_CAP_CHECK_TIMEOUT_MS = 1500;

/** The operator's view of conversations: list, read a thread, write, resolve. */
@Injectable()
export class ConversationsService {
  constructor(
    private readonly uow: UnitOfWork,
    private readonly repository: ConversationsRepository,
    private readonly messages: MessagesRepository,
    private readonly contacts: ContactsRepository,
    private readonly sends: SendService,
    private readonly stream: StreamRepository,
    private readonly clock: Clock,
    private readonly rpc: RpcClient,
  ) {}

  async list(organizationId: string, q: { status?: ConversationStatus; channel?: string; contact_id?: string; cursor?: string; limit?: number }): Promise<MessagingPage<ConversationView>> {
    const limit = pageSize(q.limit);
    const filters = { status: q.status, channel: q.channel, contact_id: q.contact_id };
    const after = q.cursor ? decodeCursor(q.cursor, filters, { acceptUnversioned: true }) : null;
    if (q.contact_id) requireId(q.contact_id, 'contact');
    return this.uow.run(async (tx) => {
      const rows = await this.repository.list(tx, organizationId, { status: q.status, channel: q.channel, contact_id: q.contact_id, after }, limit + 1);
      const page = rows.slice(0, limit);
      const last = page[page.length - 1];
      return { items: page.map(toConversationView), next_cursor: rows.length > limit && last ? encodeCursor({ createdAt: last.cursor_at, id: last.id }, filters) : null };
    });
  }

  async get(organizationId: string, conversationId: string): Promise<ConversationView> {
    requireId(conversationId, 'conversation');
    return this.uow.run(async (tx) => {
      const conversation = await this.repository.findConversation(tx, organizationId, conversationId);
      if (!conversation) throw new AppError(ErrorCode.NotFound, 'conversation not found');
      const active = await this.repository.findActiveInstance(tx, conversation.id);
      return toConversationView({ ...conversation, active_instance_id: active?.id ?? null, active_instance_message_count: active?.message_count ?? null });
    });
  }

  /** A conversation's messages, newest first, by keyset cursor. */
  async messagesOf(organizationId: string, conversationId: string, q: { cursor?: string; limit?: number }): Promise<MessagingPage<MessageView>> {
    requireId(conversationId, 'conversation');
    const limit = pageSize(q.limit);
    const filters = { conversation_id: conversationId };
    const after = q.cursor ? decodeCursor(q.cursor, filters, { acceptUnversioned: true }) : null;
    return this.uow.run(async (tx) => {
      if (!(await this.repository.findConversation(tx, organizationId, conversationId))) throw new AppError(ErrorCode.NotFound, 'conversation not found');
      const rows = await this.messages.thread(tx, organizationId, conversationId, after, limit + 1);
      const page = rows.slice(0, limit);
      const last = page[page.length - 1];
      return { items: page.map((r) => r.view), next_cursor: rows.length > limit && last ? encodeCursor({ createdAt: last.cursor_at, id: last.view.id }, filters) : null };
    });
  }

  /**
   * An operator writes in a conversation (handoff: `messaging.human_message_sent`). The caller's
   * idempotency key makes a retried request one message.
   */
  async send(organizationId: string, conversationId: string, body: MessagingSendContent & { idempotency_key: string; operator_id?: string }): Promise<MessagingSendResult> {
    requireId(conversationId, 'conversation');
    requireString(body?.idempotency_key, 'idempotency_key');
    const conversation = await this.uow.run((tx) => this.repository.findConversation(tx, organizationId, conversationId));
    if (!conversation) throw new AppError(ErrorCode.NotFound, 'conversation not found');
    if (conversation.channel === 'email') await this.refuseOverProspectCap(organizationId, conversation.contact_id, `operator:${body.idempotency_key}`);
    return this.sends.send(
      {
        organization_id: organizationId,
        idempotency_key: `operator:${body.idempotency_key}`,
        channel: conversation.channel,
        contact_id: conversation.contact_id,
        conversation_id: conversation.id,
        sender_type: 'operator',
        sender_id: body.operator_id,
        requester: 'operator',
        text: body.text,
        template: body.template,
        media: body.media,
        interactive: body.interactive,
        subject: body.subject,
      },
      { sameRequestOnly: true },
    );
  }

  /**
   * An interactive email answers 429 `prospect_send_cap_reached` at once when the mailbox reached
   * its daily prospect cap (seed 003 §6); the dispatcher's claim at the wire stays the authority, so
   * an unanswered check lets the send through. A retried request of a stored message is not asked.
   * @throws AppError prospect_send_cap_reached
   */
  private async refuseOverProspectCap(organizationId: string, contactId: string, key: string): Promise<void> {
    const { email, existing } = await this.uow.run(async (tx) => ({
      email: (await this.contacts.findById(tx, organizationId, contactId))?.email ?? null,
      existing: await this.messages.findByIdempotencyKey(tx, organizationId, key),
    }));
    if (!email || existing) return;
    let check: OutboxProspectCapCheckResult;
    try {
      check = await this.rpc.call('outbox-dispatcher', OutboxAccountRpc.ProspectCapCheck, { organization_id: organizationId, to: email }, PROSPECT_CAP_CHECK_TIMEOUT_MS);
    } catch {
      return;
    }
    if (!check.allowed) throw new AppError(ErrorCode.ProspectSendCapReached, `the mailbox sent its ${check.cap} prospect emails for today (UTC); try again after 00:00 UTC`, { cap: check.cap, sent: check.sent });
  }

  /** Marks the conversation resolved; emits `messaging.conversation.resolved` (a stop path, seed 000). */
  async resolve(organizationId: string, conversationId: string, resolvedBy: string | null): Promise<ConversationView> {
    requireId(conversationId, 'conversation');
    await this.uow.run(async (tx) => {
      const conversation = await this.repository.lockConversation(tx, conversationId);
      if (!conversation || conversation.organization_id !== organizationId) throw new AppError(ErrorCode.NotFound, 'conversation not found');
      if (conversation.status === 'resolved') return;
      const now = this.clock.now();
      await this.repository.resolve(tx, conversationId, resolvedBy, now);
      const data: ConversationResolvedData = { conversation_id: conversation.id, contact_id: conversation.contact_id, channel: conversation.channel, resolved_by: resolvedBy };
      await tx.publish({
        event_id: `messaging.conversation.resolved:${conversation.id}:${now.toISOString()}`,
        type: MessagingEvents.ConversationResolved,
        organization_id: organizationId,
        data: data,
      });
      await this.stream.append(tx, organizationId, MessagingEvents.ConversationResolved, data);
    });
    return this.get(organizationId, conversationId);
  }
}
