import { Injectable } from '@nestjs/common';
import { OnBusMessage } from '@touchpoint/bus';
import { type BusMessage, type MessageReceivedData, MessagingEvents } from '@touchpoint/contracts';
import type { Tx } from '@touchpoint/database';
import { ReplyInterruptService } from './reply-interrupt.service.js';

/** An organization's inbound email or LinkedIn message: what can interrupt an outreach enrollment. */
const inboundEmailOrLinkedIn = (message: BusMessage<MessageReceivedData>): message is BusMessage<MessageReceivedData> & { organization_id: string } => {
  const data = message.data;
  return !!message.organization_id && !!data && data.direction === 'inbound' && (data.channel === 'email' || data.channel === 'linkedin');
};

/** Feeds inbound email and LinkedIn messages to the reply interrupt (seed 003 §4.7). */
@Injectable()
export class InterruptsConsumer {
  constructor(private readonly interrupt: ReplyInterruptService) {}

  @OnBusMessage(MessagingEvents.MessageReceived, { when: inboundEmailOrLinkedIn })
  async onReceived(message: BusMessage<MessageReceivedData>, tx: Tx): Promise<void> {
    if (!inboundEmailOrLinkedIn(message)) return;
    await this.interrupt.handle(tx, message.organization_id, message.data);
  }
}
