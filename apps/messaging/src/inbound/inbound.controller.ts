import { Controller } from '@nestjs/common';
import { Payload } from '@nestjs/microservices';
import { MessagingRpc, type MessagingInboundRecordData, MessagingWhatsAppRpc, type WhatsAppInboundBatch } from '@touchpoint/contracts';
import { OnRpc } from '@touchpoint/runtime';
import { InboundReceiptsService } from './inbound-receipts.service.js';
import { InboundRecordService } from './inbound-record.service.js';

/** RPC edge of inbound messages (the gateway's webhook ingress and the other channels' receivers). */
@Controller()
export class InboundController {
  constructor(
    private readonly receipts: InboundReceiptsService,
    private readonly records: InboundRecordService,
  ) {}

  @OnRpc(MessagingWhatsAppRpc.Inbound)
  whatsapp(@Payload() batch: WhatsAppInboundBatch & { organization_id?: string }) {
    return this.receipts.accept(batch);
  }

  @OnRpc(MessagingRpc.InboundRecord)
  record(@Payload() data: MessagingInboundRecordData) {
    return this.records.record(data);
  }
}
