import { Injectable } from '@nestjs/common';
import { OnBusMessage } from '@touchpoint/bus';
import { type BusMessage, type MessageReceivedData, MessagingEvents } from '@touchpoint/contracts';
import type { Tx } from '@touchpoint/database';
import { ReplyInterruptService } from './reply-interrupt.service.js';

/** Feeds inbound email and LinkedIn messages to the reply interrupt (seed 003 §4.7). */
@Injectable()
export class InterruptsConsumer {
  constructor(private readonly interrupt: ReplyInterruptService) {}

  @OnBusMessage(MessagingEvents.MessageReceived)
  async onReceived(message: BusMessage<MessageReceivedData>, tx: Tx): Promise<void> {
    const data = message.data;
    if (!message.organization_id || !data || data.direction !== 'inbound') return;
    if (data.channel !== 'email' && data.channel !== 'linkedin') return;
    await this.interrupt.handle(tx, message.organization_id, data);
  }
}
