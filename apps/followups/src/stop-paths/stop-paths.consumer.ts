import { Injectable } from '@nestjs/common';
import { OnBusMessage } from '@touchpoint/bus';
import { type BusMessage, type ContactEventData, type ContactOptedOutData, type ConversationResolvedData, type HumanMessageSentData, type InboundDeniedData, MessagingEvents, type MessageReceivedData } from '@touchpoint/contracts';
import type { Tx } from '@touchpoint/database';
import { truncateText } from '@touchpoint/text';
import { Clock } from '@touchpoint/time';
import { SendReportsService } from '../effects/send-reports.service.js';
import { TriggerRecorder } from '../rules/trigger-recorder.js';
import { StopPathsService } from './stop-paths.service.js';

/** The longest inbound text a keyword trigger keeps, code points (WhatsApp's text limit). */
const INBOUND_KEYWORD_TEXT_MAX = 4096;

/**
 * Bus edge of the stop paths (seed 000 "Stop hooks"): each of messaging's events is applied in the
 * transaction that records it in our inbox, so the stop and the dedupe commit together. The send
 * reports handled before it in the same consumer batch are applied first (`SendReportsService.flush`),
 * so a stop sees the effects as the messages before it left them.
 */
@Injectable()
export class StopPathsConsumer {
  constructor(
    private readonly stopPaths: StopPathsService,
    private readonly recorder: TriggerRecorder,
    private readonly clock: Clock,
    private readonly reports: SendReportsService,
  ) {}

  @OnBusMessage(MessagingEvents.MessageReceived)
  async onMessageReceived(message: BusMessage<MessageReceivedData>, tx: Tx): Promise<void> {
    const d = message.data;
    if (!message.organization_id || d.direction !== 'inbound') return;
    await this.reports.flush(tx);
    await this.stopPaths.onInbound(
      tx,
      { organizationId: message.organization_id, contactId: d.contact_id, conversationId: d.conversation_id ?? null, senderId: d.channel === 'whatsapp' ? (d.sender_id ?? null) : null, text: d.text, at: new Date(message.occurred_at), optOut: d.opt_out, autoReply: d.auto_reply },
      this.clock.now(),
    );
    // An inbound text may start a keyword rule (not an auto-reply or an opt-out).
    if (d.text && !d.auto_reply && !d.opt_out) {
      await this.recorder.record(
        tx,
        { organizationId: message.organization_id, kind: 'inbound_keyword', eventId: message.event_id, contactId: d.contact_id, data: { text: truncateText(d.text, INBOUND_KEYWORD_TEXT_MAX), conversation_id: d.conversation_id ?? null }, at: this.clock.now() },
        { optional: true },
      );
    }
  }

  /**
   * A reply abuse refused (not stored by messaging): the person answered all the same, so the stop
   * paths run as for a stored reply. No keyword rule starts from it.
   */
  @OnBusMessage(MessagingEvents.InboundDenied)
  async onInboundDenied(message: BusMessage<InboundDeniedData>, tx: Tx): Promise<void> {
    const d = message.data;
    if (!message.organization_id) return;
    await this.reports.flush(tx);
    await this.stopPaths.onInbound(tx, { organizationId: message.organization_id, contactId: d.contact_id, conversationId: d.conversation_id, senderId: d.sender_id, text: d.text, at: new Date(message.occurred_at), optOut: d.opt_out, autoReply: d.auto_reply }, this.clock.now());
  }

  @OnBusMessage(MessagingEvents.ContactOptedOut)
  async onOptedOut(message: BusMessage<ContactOptedOutData>, tx: Tx): Promise<void> {
    if (!message.organization_id) return;
    await this.reports.flush(tx);
    await this.stopPaths.onOptOut(tx, message.organization_id, message.data.contact_id, new Date(message.occurred_at), this.clock.now());
  }

  @OnBusMessage(MessagingEvents.HumanMessageSent)
  async onHumanMessage(message: BusMessage<HumanMessageSentData>, tx: Tx): Promise<void> {
    if (!message.organization_id) return;
    await this.reports.flush(tx);
    await this.stopPaths.onHumanMessage(tx, message.organization_id, message.data.contact_id, message.data.conversation_id ?? null, new Date(message.occurred_at), this.clock.now());
  }

  @OnBusMessage(MessagingEvents.ConversationResolved)
  async onConversationResolved(message: BusMessage<ConversationResolvedData>, tx: Tx): Promise<void> {
    if (!message.organization_id) return;
    await this.reports.flush(tx);
    await this.stopPaths.onConversationResolved(tx, message.organization_id, message.data.contact_id, message.data.conversation_id, this.clock.now());
    await this.recorder.record(tx, { organizationId: message.organization_id, kind: 'conversation_resolved', eventId: message.event_id, contactId: message.data.contact_id, data: { conversation_id: message.data.conversation_id }, at: this.clock.now() }, { optional: true });
  }

  @OnBusMessage(MessagingEvents.ContactErased)
  async onContactErased(message: BusMessage<ContactEventData>, tx: Tx): Promise<void> {
    if (!message.organization_id) return;
    await this.reports.flush(tx);
    await this.stopPaths.onContactErased(tx, message.organization_id, message.data.contact_id, this.clock.now());
  }
}
