import { Controller } from '@nestjs/common';
import { Payload } from '@nestjs/microservices';
import { type OutboxChannel, OutboxRpc, type OutboxSenderCreateData, type OutboxSenderUpdateData } from '@touchpoint/contracts';
import { OnRpc } from '@touchpoint/runtime';
import { SendersService } from './senders.service.js';

/** RPC edge of senders (the gateway's admin REST forwards here). */
@Controller()
export class SendersController {
  constructor(private readonly senders: SendersService) {}

  @OnRpc(OutboxRpc.SenderCreate)
  create(@Payload() data: OutboxSenderCreateData) {
    return this.senders.create(data);
  }

  @OnRpc(OutboxRpc.SenderList)
  async list(@Payload() data: { organization_id: string; channel?: OutboxChannel }) {
    return { items: await this.senders.list(data.organization_id, data.channel) };
  }

  @OnRpc(OutboxRpc.SenderGet)
  get(@Payload() data: { organization_id: string; sender_id: string }) {
    return this.senders.get(data.organization_id, data.sender_id);
  }

  @OnRpc(OutboxRpc.SenderUpdate)
  update(@Payload() data: OutboxSenderUpdateData) {
    return this.senders.update(data);
  }

  @OnRpc(OutboxRpc.SenderRemove)
  remove(@Payload() data: { organization_id: string; sender_id: string }) {
    return this.senders.remove(data.organization_id, data.sender_id);
  }

  @OnRpc(OutboxRpc.SenderLookupByPhoneNumberId)
  lookup(@Payload() data: { phone_number_id: string }) {
    return this.senders.lookupByPhoneNumberId(data.phone_number_id);
  }
}
