import { Controller } from '@nestjs/common';
import { Payload } from '@nestjs/microservices';
import { type ConversationStatus, MessagingRpc, type MessagingSendContent } from '@touchpoint/contracts';
import { OnRpc } from '@touchpoint/runtime';
import { ConversationsService } from './conversations.service.js';

/** RPC edge of the operator's conversation routes. */
@Controller()
export class ConversationsController {
  constructor(private readonly conversations: ConversationsService) {}

  @OnRpc(MessagingRpc.ConversationList)
  list(@Payload() data: { organization_id: string; status?: ConversationStatus; channel?: string; contact_id?: string; cursor?: string; limit?: number }) {
    return this.conversations.list(data.organization_id, data);
  }

  @OnRpc(MessagingRpc.ConversationGet)
  get(@Payload() data: { organization_id: string; conversation_id: string }) {
    return this.conversations.get(data.organization_id, data.conversation_id);
  }

  @OnRpc(MessagingRpc.ConversationMessages)
  messages(@Payload() data: { organization_id: string; conversation_id: string; cursor?: string; limit?: number }) {
    return this.conversations.messagesOf(data.organization_id, data.conversation_id, data);
  }

  @OnRpc(MessagingRpc.ConversationSend)
  send(@Payload() data: MessagingSendContent & { organization_id: string; conversation_id: string; idempotency_key: string; operator_id?: string }) {
    return this.conversations.send(data.organization_id, data.conversation_id, data);
  }

  @OnRpc(MessagingRpc.ConversationResolve)
  resolve(@Payload() data: { organization_id: string; conversation_id: string; resolved_by?: string }) {
    return this.conversations.resolve(data.organization_id, data.conversation_id, data.resolved_by ?? null);
  }
}
