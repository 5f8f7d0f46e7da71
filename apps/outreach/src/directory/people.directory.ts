import { Inject, Injectable } from '@nestjs/common';
import { type ContactView, type LinkedinStateQuery, type LinkedinStateView, type MessageView, MessagingRpc, OutreachDispatcherRpc, OutboxRpc } from '@touchpoint/contracts';
import { AppError, ErrorCode } from '@touchpoint/errors';
import type { Logger } from '@touchpoint/observability';
import { APP_CONFIG, LOGGER, RpcClient } from '@touchpoint/runtime';
import type { OutreachConfig } from '../outreach.config.js';

/** A channel value that may sit on the do-not-contact list. */
export interface ChannelValue {
  channel: 'email' | 'linkedin';
  value: string;
}

/**
 * What outreach reads from other services, always fresh (seed 003 §5 "Not stored": the address
 * and its suppression are read, never copied): people and their threads from messaging, the
 * do-not-contact list, senders and LinkedIn state from the outbox-dispatcher. Every call has a
 * deadline (RPC_TIMEOUT_MS); callers decide what a failure means.
 */
@Injectable()
export class PeopleDirectory {
  constructor(
    private readonly rpc: RpcClient,
    @Inject(APP_CONFIG) private readonly config: OutreachConfig,
    @Inject(LOGGER) private readonly logger: Logger,
  ) {}

  /**
   * The contact, or null when it does not exist or was erased (the person is gone).
   * @throws AppError service_unavailable when messaging does not answer
   */
  async person(organizationId: string, personId: string, timeoutMs?: number): Promise<ContactView | null> {
    try {
      const contact = await this.rpc.call('messaging', MessagingRpc.ContactGet, { organization_id: organizationId, contact_id: personId }, timeoutMs);
      return contact && !contact.erased ? contact : null;
    } catch (err) {
      if (err instanceof AppError && (err.code === ErrorCode.NotFound || err.code === ErrorCode.ValidationFailed)) return null;
      throw err;
    }
  }

  /**
   * Which of `values` are suppressed (the dispatcher's contact_suppressions).
   * @throws AppError service_unavailable when the list cannot be read: callers must refuse, not guess
   */
  async suppressed(organizationId: string, values: ChannelValue[], timeoutMs?: number): Promise<ChannelValue[]> {
    if (values.length === 0) return [];
    try {
      const result = await this.rpc.call('outbox-dispatcher', OutreachDispatcherRpc.SuppressionCheck, { organization_id: organizationId, values }, timeoutMs);
      return result?.suppressed ?? [];
    } catch (err) {
      this.logger.warn({ event: 'outreach.suppression_read_failed', organization_id: organizationId, err: (err as Error).message }, 'suppression list unreadable');
      throw new AppError(ErrorCode.ServiceUnavailable, 'the suppression list cannot be read right now');
    }
  }

  /**
   * The LinkedIn relation of a person to a sender account. A failed read returns null: the caller
   * counts LinkedIn as suppressed for that run (seed 003 §4.2).
   */
  async linkedin(query: LinkedinStateQuery, timeoutMs?: number): Promise<LinkedinStateView | null> {
    try {
      return await this.rpc.call('outbox-dispatcher', OutreachDispatcherRpc.LinkedinState, query, timeoutMs);
    } catch (err) {
      this.logger.warn({ event: 'outreach.linkedin_read_failed', organization_id: query.organization_id, err: (err as Error).message }, 'LinkedIn state unreadable');
      return null;
    }
  }

  /** Whether a dispatcher sender exists and is connected; false when it cannot be read. */
  async senderConnected(organizationId: string, senderId: string | null, timeoutMs?: number): Promise<boolean> {
    if (!senderId) return false;
    try {
      const sender = await this.rpc.call('outbox-dispatcher', OutboxRpc.SenderGet, { organization_id: organizationId, sender_id: senderId }, timeoutMs);
      return sender?.status === 'connected';
    } catch {
      return false;
    }
  }

  /**
   * Messages of one conversation, newest first (messaging's page order), at most `limit`.
   * @throws AppError service_unavailable
   */
  async conversationMessages(organizationId: string, conversationId: string, limit = 100, timeoutMs?: number): Promise<MessageView[]> {
    const page = await this.rpc.call('messaging', MessagingRpc.ConversationMessages, { organization_id: organizationId, conversation_id: conversationId, limit }, timeoutMs ?? this.config.RPC_TIMEOUT_MS);
    return page?.items ?? [];
  }
}

/** The channel values of a person that the do-not-contact list can hold. */
export function channelValuesOf(contact: Pick<ContactView, 'email' | 'linkedin_url' | 'linkedin_provider_id'>, channels: readonly string[] = ['email', 'linkedin']): ChannelValue[] {
  const values: ChannelValue[] = [];
  if (channels.includes('email') && contact.email) values.push({ channel: 'email', value: contact.email.toLowerCase() });
  if (channels.includes('linkedin')) {
    if (contact.linkedin_provider_id) values.push({ channel: 'linkedin', value: contact.linkedin_provider_id });
    if (contact.linkedin_url) values.push({ channel: 'linkedin', value: contact.linkedin_url });
  }
  return values;
}

/** Whether `values` holds `channel`/`value` (emails compare case-insensitively). */
export function includesValue(values: ChannelValue[], channel: string, value: string | null | undefined): boolean {
  if (!value) return false;
  const v = channel === 'email' ? value.toLowerCase() : value;
  return values.some((s) => s.channel === channel && (channel === 'email' ? s.value.toLowerCase() : s.value) === v);
}
