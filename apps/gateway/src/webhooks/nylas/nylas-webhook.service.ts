import { Inject, Injectable } from '@nestjs/common';
import { type EmailBounceData, MessagingRpc, type MessagingInboundRecordData, OutreachDispatcherRpc, OutreachSuppressionRpc, type ProviderAccountOwner } from '@touchpoint/contracts';
import { AppError, ErrorCode } from '@touchpoint/errors';
import type { Logger } from '@touchpoint/observability';
import { LOGGER, RpcClient } from '@touchpoint/runtime';
import { htmlToText } from './nylas-signature.js';

/** A Nylas v3 notification (CloudEvents-like envelope; fixtures/nylas). */
interface NylasNotification {
  type?: string;
  id?: string;
  data?: { grant_id?: string; object?: NylasObject };
}

interface NylasObject {
  id?: string;
  grant_id?: string;
  thread_id?: string;
  subject?: string;
  from?: { email?: string; name?: string }[];
  date?: number;
  body?: string;
  snippet?: string;
  folders?: string[];
  reply_to_message_id?: string;
  headers?: { name: string; value: string }[];
  // message.bounce_detected
  bounced_addresses?: string | string[];
  origin?: { id?: string };
}

export type NylasDeliveryResult = { outcome: 'stored' | 'duplicate' | 'bounced' | 'ignored'; reason?: string };

/** Folders of our own mail: a message there is not an inbound reply. */
const OWN_FOLDERS = new Set(['SENT', 'DRAFTS', 'DRAFT', 'TRASH']);

/**
 * Hands a verified Nylas notification to its owner (DESIGN §1): `message.created` and
 * `message.updated` of an inbound email → messaging `messaging.inbound.record` (which stores it
 * once per Nylas message id, whichever type comes first, and starts the reply interrupt);
 * `message.bounce_detected` → outreach `outreach.email.bounce` (suppression, enrollments due now).
 * The grant names the organization (the dispatcher's email sender). Resolves once the owner stored
 * it; throws service_unavailable otherwise, so Nylas redelivers.
 */
@Injectable()
export class NylasWebhookService {
  constructor(
    private readonly rpc: RpcClient,
    @Inject(LOGGER) private readonly logger: Logger,
  ) {}

  /** @throws AppError service_unavailable when an owner did not confirm */
  async deliver(payload: unknown): Promise<NylasDeliveryResult> {
    const n = payload as NylasNotification | null;
    const object = n?.data?.object;
    const type = n?.type;
    if (!object || (type !== 'message.created' && type !== 'message.updated' && type !== 'message.bounce_detected')) return { outcome: 'ignored', reason: 'type' };
    const grantId = n?.data?.grant_id ?? object.grant_id;
    if (!grantId) return { outcome: 'ignored', reason: 'no_grant' };
    try {
      const owner = await this.rpc.call('outbox-dispatcher', OutreachDispatcherRpc.SenderLookupByAccount, { channel: 'email', account_id: grantId });
      if (!owner?.organization_id) return { outcome: 'ignored', reason: 'unknown_grant' };
      if (type === 'message.bounce_detected') return await this.bounce(owner.organization_id, object);
      return await this.message(owner, object);
    } catch (err) {
      this.logger.warn({ event: 'gateway.nylas_webhook_not_stored', type, notification_id: n?.id, err: (err as Error).message }, 'Nylas webhook not acknowledged; Nylas will redeliver');
      throw new AppError(ErrorCode.ServiceUnavailable, 'the webhook could not be stored; retry later', { code: err instanceof AppError ? err.code : undefined });
    }
  }

  private async message(owner: ProviderAccountOwner, m: NylasObject): Promise<NylasDeliveryResult> {
    const from = m.from?.[0]?.email?.trim();
    if (!m.id || !from) return { outcome: 'ignored', reason: 'incomplete' };
    if ((m.folders ?? []).some((f) => OWN_FOLDERS.has(f.toUpperCase())) || (owner.address && from.toLowerCase() === owner.address.toLowerCase())) return { outcome: 'ignored', reason: 'own_message' };
    const record: MessagingInboundRecordData = {
      organization_id: owner.organization_id!,
      channel: 'email',
      from,
      external_id: m.id,
      text: htmlToText(m.body) || m.snippet || '',
      ...(m.from?.[0]?.name ? { from_name: m.from[0].name } : {}),
      ...(m.thread_id ? { thread_id: m.thread_id } : {}),
      ...(m.subject ? { subject: m.subject } : {}),
      ...(m.reply_to_message_id ? { in_reply_to: m.reply_to_message_id } : {}),
      ...(Array.isArray(m.headers) ? { headers: m.headers } : {}),
      // The mailbox it came to: its grant is the one that may read the message's headers.
      ...(owner.sender_id ? { sender_id: owner.sender_id } : {}),
      ...(typeof m.date === 'number' ? { received_at: new Date(m.date * 1000).toISOString() } : {}),
    };
    const result = await this.rpc.call('messaging', MessagingRpc.InboundRecord, record);
    return { outcome: result.duplicate ? 'duplicate' : 'stored' };
  }

  private async bounce(organizationId: string, b: NylasObject): Promise<NylasDeliveryResult> {
    // Nylas documents `bounced_addresses` as one string; accept a list or a comma-separated string too.
    const raw = Array.isArray(b.bounced_addresses) ? b.bounced_addresses : typeof b.bounced_addresses === 'string' ? b.bounced_addresses.split(',') : [];
    const emails = raw.map((e) => e.trim()).filter((e) => e.includes('@'));
    if (emails.length === 0) return { outcome: 'ignored', reason: 'no_address' };
    const data: EmailBounceData = { organization_id: organizationId, emails, provider_message_id: b.origin?.id ?? null };
    await this.rpc.call('outreach', OutreachSuppressionRpc.EmailBounce, data);
    return { outcome: 'bounced' };
  }
}
