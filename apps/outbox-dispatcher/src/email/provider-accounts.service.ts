import { Inject, Injectable } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import { type OutboxAccountCreateData, OutboxEvents, type OutboxSenderEventData, type OutboxSenderView, type ProviderAccountLookup, type ProviderAccountOwner } from '@touchpoint/contracts';
import { isUniqueViolation, poolOf } from '@touchpoint/database';
import { AppError, ErrorCode } from '@touchpoint/errors';
import { APP_CONFIG, UnitOfWork } from '@touchpoint/runtime';
import { Clock } from '@touchpoint/time';
import type { OutboxDispatcherConfig } from '../outbox-dispatcher.config.js';
import { CredentialsCipher } from '../senders/credentials.cipher.js';
import { SenderOwnershipService } from '../senders/sender-ownership.service.js';
import { type SenderRow, SendersRepository } from '../senders/senders.repository.js';

/**
 * Email mailboxes (a Nylas grant) and LinkedIn accounts (Unipile) as dispatcher senders (seed
 * 003 §4.6). The credentials (`api_key` with the `grant_id` and `provider`, or the `account_id`) are
 * stored encrypted like every sender's; the account id is also kept in the clear, unique among live
 * senders, because webhooks name it and the gateway routes them by it.
 */
@Injectable()
export class ProviderAccountsService {
  private readonly cipher: CredentialsCipher;

  constructor(
    private readonly uow: UnitOfWork,
    private readonly clock: Clock,
    private readonly ownership: SenderOwnershipService,
    private readonly senders: SendersRepository,
    @Inject(APP_CONFIG) config: OutboxDispatcherConfig,
  ) {
    this.cipher = new CredentialsCipher(config.OUTBOX_CREDENTIALS_KEY);
  }

  /**
   * Adds a mailbox or LinkedIn account once the provider shows that `api_key` can read
   * `account_id` (the Nylas grant, the Unipile account; SenderOwnershipService). The proof comes
   * before the uniqueness check, so only a caller who holds the credential learns the account is
   * taken.
   * @throws AppError validation_failed, sender_unverified, service_unavailable, conflict (the account belongs to a live sender already)
   */
  async create(data: OutboxAccountCreateData): Promise<OutboxSenderView> {
    for (const field of ['organization_id', 'account_id', 'address', 'api_key'] as const) {
      if (typeof data?.[field] !== 'string' || data[field].trim() === '') throw new AppError(ErrorCode.ValidationFailed, `${field} is required`, { field });
    }
    if (data.channel !== 'email' && data.channel !== 'linkedin') throw new AppError(ErrorCode.ValidationFailed, 'channel must be email or linkedin', { field: 'channel' });
    if (data.channel === 'email') await this.ownership.proveNylasGrant(data.account_id, data.api_key);
    else await this.ownership.proveUnipileAccount(data.account_id, data.api_key);
    const id = randomUUID();
    const now = this.clock.now();
    const secrets: Record<string, string> = data.channel === 'email' ? { api_key: data.api_key, grant_id: data.account_id, provider: (data.provider ?? '').toLowerCase() } : { api_key: data.api_key, account_id: data.account_id };
    const address = data.channel === 'email' ? data.address.trim().toLowerCase() : data.address.trim();
    try {
      return await this.uow.run(async (tx) => {
        const isDefault = data.is_default ?? !(await this.senders.hasDefault(tx, data.organization_id, data.channel));
        if (isDefault) await this.senders.clearDefault(tx, data.organization_id, data.channel, id, now);
        const row = await this.senders.insertAccount(tx, {
          id,
          organizationId: data.organization_id,
          channel: data.channel,
          label: data.label ?? null,
          address,
          credentialsEncrypted: this.cipher.encrypt(secrets, id),
          isDefault,
          accountId: data.account_id,
          provider: data.provider ?? null,
          now,
        });
        const view = toView(row);
        const event: OutboxSenderEventData = { sender_id: id, channel: data.channel, address, is_default: isDefault, status: 'connected' };
        await tx.publish({ event_id: `${OutboxEvents.SenderConnected}:${id}:created`, type: OutboxEvents.SenderConnected, organization_id: data.organization_id, data: event });
        return view;
      });
    } catch (err) {
      if (isUniqueViolation(err)) throw new AppError(ErrorCode.Conflict, 'this provider account already belongs to a sender');
      throw err;
    }
  }

  /** Which organization's live sender is this provider account (all null when nobody's). */
  async lookup(query: ProviderAccountLookup): Promise<ProviderAccountOwner> {
    if ((query?.channel !== 'email' && query?.channel !== 'linkedin') || typeof query.account_id !== 'string') throw new AppError(ErrorCode.ValidationFailed, 'channel (email or linkedin) and account_id are required');
    const row = await this.senders.findByProviderAccount(poolOf(this.uow.dataSource), query.channel, query.account_id);
    return row ? { organization_id: row.organization_id, sender_id: row.id, address: row.address } : { organization_id: null, sender_id: null, address: null };
  }
}

function toView(r: SenderRow): OutboxSenderView {
  return {
    id: r.id,
    organization_id: r.organization_id,
    channel: r.channel,
    label: r.label,
    phone_number_id: null,
    display_phone_number: null,
    business_account_id: null,
    status: r.status,
    is_default: r.is_default,
    has_credentials: true,
    created_at: new Date(r.created_at).toISOString(),
    updated_at: new Date(r.updated_at).toISOString(),
  };
}
