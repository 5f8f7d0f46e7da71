import { Inject, Injectable } from '@nestjs/common';
import { type LinkedinRelationAcceptedData, MessagingRpc, type MessagingInboundRecordData, OutboxLinkedinRpc, OutreachDispatcherRpc } from '@touchpoint/contracts';
import { AppError, ErrorCode } from '@touchpoint/errors';
import type { Logger } from '@touchpoint/observability';
import { LOGGER, RpcClient } from '@touchpoint/runtime';

/** An attendee of a Unipile chat (fixtures/unipile/webhook-message-received.json). */
interface UnipileAttendee {
  attendee_id?: string;
  attendee_name?: string;
  attendee_provider_id?: string;
  attendee_profile_url?: string;
}

/** A Unipile API v1 `message_received` delivery. */
interface UnipileMessageEvent {
  event?: string;
  account_id?: string;
  account_info?: { user_id?: string };
  chat_id?: string;
  message_id?: string;
  message?: string;
  timestamp?: string;
  sender?: UnipileAttendee;
  /** Present in some deliveries: the id of the message this one quotes. */
  quoted?: { provider_id?: string; id?: string } | null;
}

/** A Unipile `new_relation` delivery (fixtures/unipile/webhook-new-relation.json): an invitation was accepted. */
interface UnipileRelationEvent {
  event: 'new_relation';
  account_id?: string;
  user_provider_id?: string;
  user_public_identifier?: string;
  user_profile_url?: string;
}

export type UnipileDeliveryResult = { outcome: 'stored' | 'duplicate' | 'ignored'; reason?: string };

/**
 * Hands a Unipile delivery to its owner (DESIGN §1): an inbound LinkedIn `message_received` (not
 * sent by the account itself: Unipile fires the event for our own messages too) → messaging
 * `messaging.inbound.record` with the chat id as the thread, which stores it once per message id
 * and starts the reply interrupt. The account names the organization (the dispatcher's LinkedIn
 * sender). Any failure throws service_unavailable: the route answers 503 and Unipile sends the
 * delivery again (seed 003 §4.7).
 */
@Injectable()
export class UnipileWebhookService {
  constructor(
    private readonly rpc: RpcClient,
    @Inject(LOGGER) private readonly logger: Logger,
  ) {}

  /** @throws AppError service_unavailable when the owner did not confirm */
  async deliver(payload: unknown): Promise<UnipileDeliveryResult> {
    if ((payload as { event?: string } | null)?.event === 'new_relation') return this.relation(payload as UnipileRelationEvent);
    const e = payload as UnipileMessageEvent | null;
    if (e?.event !== 'message_received') return { outcome: 'ignored', reason: 'event' };
    const from = e.sender?.attendee_provider_id;
    if (!e.account_id || !e.message_id || !from) return { outcome: 'ignored', reason: 'incomplete' };
    if (e.account_info?.user_id && from === e.account_info.user_id) return { outcome: 'ignored', reason: 'own_message' };
    try {
      const owner = await this.rpc.call('outbox-dispatcher', OutreachDispatcherRpc.SenderLookupByAccount, { channel: 'linkedin', account_id: e.account_id });
      if (!owner?.organization_id) return { outcome: 'ignored', reason: 'unknown_account' };
      if (owner.address && owner.address === from) return { outcome: 'ignored', reason: 'own_message' };
      const quoted = e.quoted?.provider_id ?? e.quoted?.id;
      const record: MessagingInboundRecordData = {
        organization_id: owner.organization_id,
        channel: 'linkedin',
        from,
        external_id: e.message_id,
        text: typeof e.message === 'string' ? e.message : '',
        ...(e.sender?.attendee_name ? { from_name: e.sender.attendee_name } : {}),
        ...(e.chat_id ? { thread_id: e.chat_id } : {}),
        ...(quoted ? { in_reply_to: quoted } : {}),
        ...(e.timestamp && !Number.isNaN(Date.parse(e.timestamp)) ? { received_at: new Date(e.timestamp).toISOString() } : {}),
      };
      const result = await this.rpc.call('messaging', MessagingRpc.InboundRecord, record);
      return { outcome: result.duplicate ? 'duplicate' : 'stored' };
    } catch (err) {
      this.logger.warn({ event: 'gateway.unipile_webhook_not_stored', account_id: e.account_id, message_id: e.message_id, err: (err as Error).message }, 'Unipile webhook not acknowledged; Unipile will redeliver');
      throw new AppError(ErrorCode.ServiceUnavailable, 'the webhook could not be stored; retry later', { code: err instanceof AppError ? err.code : undefined });
    }
  }

  /** `new_relation` → the dispatcher records the relation (LinkedIn state `connected`). */
  private async relation(e: UnipileRelationEvent): Promise<UnipileDeliveryResult> {
    if (!e.account_id || !e.user_provider_id) return { outcome: 'ignored', reason: 'incomplete' };
    const data: LinkedinRelationAcceptedData = { account_id: e.account_id, provider_id: e.user_provider_id, public_identifier: e.user_public_identifier ?? null, profile_url: e.user_profile_url ?? null };
    try {
      const result = await this.rpc.call('outbox-dispatcher', OutboxLinkedinRpc.RelationAccepted, data);
      return result.stored ? { outcome: 'stored' } : { outcome: 'ignored', reason: 'unknown_account' };
    } catch (err) {
      this.logger.warn({ event: 'gateway.unipile_webhook_not_stored', account_id: e.account_id, err: (err as Error).message }, 'Unipile relation not acknowledged; Unipile will redeliver');
      throw new AppError(ErrorCode.ServiceUnavailable, 'the webhook could not be stored; retry later', { code: err instanceof AppError ? err.code : undefined });
    }
  }
}
