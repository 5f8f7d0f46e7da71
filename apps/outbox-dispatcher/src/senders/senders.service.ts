import { Inject, Injectable } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import { type OutboxChannel, OutboxEvents, type OutboxSenderCreateData, type OutboxSenderEventData, type OutboxSenderUpdateData, type OutboxSenderView } from '@touchpoint/contracts';
import { isUuid, requireString, type Tx } from '@touchpoint/database';
import { AppError, ErrorCode } from '@touchpoint/errors';
import { APP_CONFIG, UnitOfWork } from '@touchpoint/runtime';
import { Clock } from '@touchpoint/time';
import type { OutboxDispatcherConfig } from '../outbox-dispatcher.config.js';
import type { SenderCredentials } from '../providers/provider-adapter.js';
import { CredentialsCipher } from './credentials.cipher.js';
import { SenderOwnershipService } from './sender-ownership.service.js';
import { type SenderRow, SendersRepository } from './senders.repository.js';

/** The sender events this service publishes (`OutboxSenderEventData`). */
type SenderEventType = (typeof OutboxEvents)['SenderConnected' | 'SenderDisconnected' | 'SenderRemoved' | 'SenderUpdated'];

/** `status_reason` of a sender the dispatcher disconnected because Graph answered 190. */
export const TOKEN_INVALID = 'token_invalid';

/** How long a decrypted sender is reused by the drain before it is read again, ms. */
const SENDER_CACHE_MS = 5000;

/**
 * Senders: the business numbers (and later mailboxes and LinkedIn accounts) an organization sends
 * from, with credentials encrypted at rest. Every change publishes an
 * `outbox.sender.*` event so other services know who owns a number and whether it can send.
 */
@Injectable()
export class SendersService {
  private readonly cipher: CredentialsCipher;
  private readonly cache = new Map<string, { at: number; sender: SenderCredentials }>();

  constructor(
    private readonly uow: UnitOfWork,
    private readonly repository: SendersRepository,
    private readonly clock: Clock,
    private readonly ownership: SenderOwnershipService,
    @Inject(APP_CONFIG) config: OutboxDispatcherConfig,
  ) {
    this.cipher = new CredentialsCipher(config.OUTBOX_CREDENTIALS_KEY);
  }

  /**
   * Adds a WhatsApp business number once Graph shows that `access_token` can read
   * `phone_number_id` (SenderOwnershipService). The first sender of a channel becomes its default.
   * The proof comes before the uniqueness check, so only a caller who holds the number's token
   * learns that it is registered already.
   * @throws AppError validation_failed (missing fields), unsupported_channel, sender_unverified
   *   (the token does not own the number), service_unavailable (Graph did not answer), conflict
   *   (number already registered)
   */
  async create(data: OutboxSenderCreateData): Promise<OutboxSenderView> {
    requireString(data.organization_id, 'organization_id');
    if (data.channel !== 'whatsapp') throw new AppError(ErrorCode.UnsupportedChannel, `channel ${String(data.channel)} has no sender support yet`);
    for (const field of ['phone_number_id', 'display_phone_number', 'business_account_id', 'access_token'] as const) requireString(data[field], field);
    if (!/^\d{1,32}$/.test(data.phone_number_id)) throw new AppError(ErrorCode.ValidationFailed, 'phone_number_id must be digits', { field: 'phone_number_id' });
    if (data.status !== undefined && !['connected', 'disconnected'].includes(data.status)) throw new AppError(ErrorCode.ValidationFailed, 'status must be connected or disconnected');
    await this.ownership.proveWhatsAppNumber(data.phone_number_id, data.access_token);
    const now = this.clock.now();
    try {
      return await this.uow.run(async (tx) => {
        const existing = await this.repository.list(tx, data.organization_id, data.channel);
        const id = randomUUID();
        const row = await this.repository.insert(tx, {
          id,
          organization_id: data.organization_id,
          channel: data.channel,
          label: data.label ?? null,
          phone_number_id: data.phone_number_id,
          display_phone_number: data.display_phone_number,
          business_account_id: data.business_account_id,
          address: null,
          credentials_encrypted: this.cipher.encrypt({ access_token: data.access_token }, id),
          status: data.status ?? 'connected',
          is_default: data.is_default ?? existing.length === 0,
          created_at: now,
        });
        if (row.is_default) await this.repository.clearDefault(tx, row.organization_id, row.channel, row.id);
        await this.publish(tx, row, row.status === 'connected' ? OutboxEvents.SenderConnected : OutboxEvents.SenderDisconnected, 'created');
        return toView(row);
      });
    } catch (err) {
      if ((err as { code?: string }).code === '23505') throw new AppError(ErrorCode.Conflict, 'this phone number id is already registered', { field: 'phone_number_id' });
      throw err;
    }
  }

  async list(organizationId: string, channel?: OutboxChannel): Promise<OutboxSenderView[]> {
    return this.uow.run(async (tx) => (await this.repository.list(tx, organizationId, channel)).map(toView));
  }

  /** @throws AppError not_found (never another organization's) */
  async get(organizationId: string, senderId: string): Promise<OutboxSenderView> {
    return this.uow.run(async (tx) => toView(await this.mustFind(tx, organizationId, senderId)));
  }

  /**
   * Changes labels, numbers, the token (replaced, never returned; a new token must prove it owns the
   * sender's number first, as on create), the default flag or the status. A status change publishes
   * `outbox.sender.connected`/`disconnected`, anything else `updated`.
   * @throws AppError not_found, validation_failed, sender_unverified, service_unavailable
   */
  async update(data: OutboxSenderUpdateData): Promise<OutboxSenderView> {
    requireString(data.organization_id, 'organization_id');
    requireString(data.sender_id, 'sender_id');
    if (data.status !== undefined && !['connected', 'disconnected'].includes(data.status)) throw new AppError(ErrorCode.ValidationFailed, 'status must be connected or disconnected');
    if (data.access_token !== undefined) {
      requireString(data.access_token, 'access_token');
      const current = await this.uow.run((tx) => this.mustFind(tx, data.organization_id, data.sender_id));
      if (current.channel !== 'whatsapp' || !current.phone_number_id) throw new AppError(ErrorCode.ValidationFailed, 'only a WhatsApp sender takes an access_token', { field: 'access_token' });
      await this.ownership.proveWhatsAppNumber(current.phone_number_id, data.access_token);
    }
    const view = await this.uow.run(async (tx) => {
      const current = await this.mustFind(tx, data.organization_id, data.sender_id, true);
      const changes: Parameters<SendersRepository['update']>[2] = {};
      if (data.label !== undefined) changes.label = data.label;
      if (data.display_phone_number !== undefined) changes.display_phone_number = data.display_phone_number;
      if (data.business_account_id !== undefined) changes.business_account_id = data.business_account_id;
      if (data.access_token !== undefined) changes.credentials_encrypted = this.cipher.encrypt({ access_token: data.access_token }, current.id);
      if (data.status !== undefined) changes.status = data.status;
      // A person reconnecting the sender, or giving it a new token, ends the dispatcher's own disconnect reason.
      if ((data.status === 'connected' || data.access_token !== undefined) && current.status_reason) changes.status_reason = null;
      if (data.is_default !== undefined) changes.is_default = data.is_default;
      if (Object.keys(changes).length === 0) return toView(current);
      const row = await this.repository.update(tx, current.id, changes, this.clock.now());
      if (row.is_default) await this.repository.clearDefault(tx, row.organization_id, row.channel, row.id);
      const type = data.status !== undefined && data.status !== current.status ? (data.status === 'connected' ? OutboxEvents.SenderConnected : OutboxEvents.SenderDisconnected) : OutboxEvents.SenderUpdated;
      await this.publish(tx, row, type, row.updated_at.toISOString());
      return toView(row);
    });
    this.cache.delete(data.sender_id);
    return view;
  }

  /** Removes a sender; its queued entries fail as `sender_unavailable` when their turn comes. */
  async remove(organizationId: string, senderId: string): Promise<{ removed: true }> {
    await this.uow.run(async (tx) => {
      const current = await this.mustFind(tx, organizationId, senderId, true);
      await this.repository.markRemoved(tx, current.id, this.clock.now());
      await this.publish(tx, { ...current, status: 'disconnected' }, OutboxEvents.SenderRemoved, 'removed');
    });
    this.cache.delete(senderId);
    return { removed: true };
  }

  /**
   * Graph answered 190 (the access token expired or was revoked): the sender is disconnected in
   * `tx` with reason `token_invalid`, and `outbox.sender.disconnected` tells the organization
   * (messaging shows it on the real-time feed). Its queued entries then fail `sender_token_invalid`
   * without a call, and enqueues answer `sender_disconnected`, until a person gives it a new token.
   * No-op when the sender is no longer connected.
   * @returns whether this call disconnected it
   */
  async disconnectForInvalidToken(tx: Tx, senderId: string, error: { code: string | null; subcode: string | null }): Promise<boolean> {
    const row = await this.repository.disconnectForReason(tx, senderId, TOKEN_INVALID, this.clock.now());
    this.cache.delete(senderId);
    if (!row) return false;
    await this.publish(tx, row, OutboxEvents.SenderDisconnected, `${TOKEN_INVALID}:${row.updated_at.toISOString()}`, { reason: TOKEN_INVALID, error_code: error.code, error_subcode: error.subcode });
    return true;
  }

  /** Forgets a cached sender (after a commit that changed it). */
  forget(senderId: string): void {
    this.cache.delete(senderId);
  }

  /** Who owns a business number (for webhook routing); nulls when nobody does. */
  async lookupByPhoneNumberId(phoneNumberId: string): Promise<{ organization_id: string | null; sender_id: string | null }> {
    return this.uow.run(async (tx) => {
      const row = await this.repository.findByPhoneNumberId(tx, String(phoneNumberId));
      return row ? { organization_id: row.organization_id, sender_id: row.id } : { organization_id: null, sender_id: null };
    });
  }

  /**
   * The sender an enqueue uses: the given one, or the organization's default for the channel.
   * @throws AppError sender_not_found, sender_disconnected
   */
  async resolveForEnqueue(tx: Tx, organizationId: string, channel: OutboxChannel, senderId: string | null | undefined): Promise<SenderRow> {
    const row = senderId ? await this.repository.find(tx, organizationId, senderId) : await this.repository.findDefault(tx, organizationId, channel);
    return checkForEnqueue(row, channel, senderId);
  }

  /**
   * The senders of a consumer batch of enqueues in one statement (`resolveForEnqueue` for each
   * request, its checks left to `checkForEnqueue`): the row each request names, or undefined when
   * there is none, by `senderRequestOf`. A request whose `sender_id` is not a uuid is left out of
   * the answer (the caller resolves it alone, as `resolveForEnqueue` would).
   */
  async readForEnqueue(tx: Tx, requests: SenderRequest[]): Promise<Map<string, SenderRow | undefined>> {
    const byKey = new Map<string, SenderRequest>();
    for (const r of requests) if (!r.senderId || isUuid(r.senderId)) byKey.set(senderRequestOf(r), r);
    const ids = new Set<string>();
    const defaults = new Map<string, { organizationId: string; channel: OutboxChannel }>();
    for (const r of byKey.values()) {
      if (r.senderId) ids.add(r.senderId.toLowerCase());
      else defaults.set(senderRequestOf(r), { organizationId: r.organizationId, channel: r.channel });
    }
    const rows = await this.repository.findForEnqueue(tx, [...ids], [...defaults.values()]);
    const byId = new Map<string, SenderRow>();
    const defaultOf = new Map<string, SenderRow>();
    for (const { as_default: asDefault, ...row } of rows) {
      if (asDefault) defaultOf.set(senderRequestOf({ organizationId: row.organization_id, channel: row.channel }), row);
      else byId.set(row.id, row);
    }
    const answer = new Map<string, SenderRow | undefined>();
    for (const [key, r] of byKey) {
      // `find` reads within the organization: another organization's sender is no sender here.
      const row = r.senderId ? byId.get(r.senderId.toLowerCase()) : defaultOf.get(key);
      answer.set(key, row && row.organization_id === r.organizationId ? row : undefined);
    }
    return answer;
  }

  /**
   * A sender with decrypted credentials for the drain (cached briefly); null when removed. Reads
   * in `tx` when given: a caller holding a connection must not wait for a second one.
   */
  async credentialsFor(senderId: string, tx?: Tx): Promise<SenderCredentials | null> {
    const hit = this.cache.get(senderId);
    if (hit && Date.now() - hit.at < SENDER_CACHE_MS) return hit.sender;
    const row = tx ? await this.repository.findAny(tx, senderId) : await this.uow.run((t) => this.repository.findAny(t, senderId));
    if (!row || row.removed_at) {
      this.cache.delete(senderId);
      return null;
    }
    const sender: SenderCredentials = {
      senderId: row.id,
      organizationId: row.organization_id,
      channel: row.channel,
      status: row.status,
      statusReason: row.status_reason ?? null,
      phoneNumberId: row.phone_number_id,
      displayPhoneNumber: row.display_phone_number,
      businessAccountId: row.business_account_id,
      address: row.address,
      secrets: this.cipher.decrypt(row.credentials_encrypted, row.id),
    };
    this.cache.set(senderId, { at: Date.now(), sender });
    return sender;
  }

  private async mustFind(tx: Tx, organizationId: string, senderId: string, forUpdate = false): Promise<SenderRow> {
    const row = await this.repository.find(tx, organizationId, senderId, forUpdate);
    if (!row) throw new AppError(ErrorCode.NotFound, 'sender not found');
    return row;
  }

  private async publish(tx: Tx, row: SenderRow, type: SenderEventType, cause: string, extra: Partial<OutboxSenderEventData> = {}): Promise<void> {
    const data: OutboxSenderEventData = {
      ...extra,
      sender_id: row.id,
      channel: row.channel,
      phone_number_id: row.phone_number_id,
      display_phone_number: row.display_phone_number,
      address: row.address,
      is_default: row.is_default,
      status: type === OutboxEvents.SenderRemoved ? 'removed' : row.status,
    };
    await tx.publish({ event_id: `${type}:${row.id}:${cause}`, type, organization_id: row.organization_id, data: data });
  }
}

/** Which sender an enqueue asks for: `senderId`, or (none) the channel's default. */
export interface SenderRequest {
  organizationId: string;
  channel: OutboxChannel;
  senderId?: string | null;
}

/** One map key per sender request (`readForEnqueue`); an empty `senderId` asks for the default, as in `resolveForEnqueue`. */
export const senderRequestOf = (r: SenderRequest): string => (r.senderId ? `id\u0000${r.organizationId}\u0000${r.senderId.toLowerCase()}` : `default\u0000${r.organizationId}\u0000${r.channel}`);

/**
 * The sender an enqueue may use: `row` (what `resolveForEnqueue` or `readForEnqueue` found for
 * the request) when it sends on `channel` and is connected.
 * @throws AppError sender_not_found (no row, or another channel's), sender_disconnected
 */
export function checkForEnqueue(row: SenderRow | undefined, channel: OutboxChannel, senderId: string | null | undefined): SenderRow {
  if (!row || row.channel !== channel) throw new AppError(ErrorCode.SenderNotFound, senderId ? 'no such sender in this organization' : `the organization has no ${channel} sender`);
  if (row.status !== 'connected') throw new AppError(ErrorCode.SenderDisconnected, 'the sender is disconnected', { sender_id: row.id });
  return row;
}

/** The public shape: never a credential. */
export function toView(row: SenderRow): OutboxSenderView {
  return {
    id: row.id,
    organization_id: row.organization_id,
    channel: row.channel,
    label: row.label,
    phone_number_id: row.phone_number_id,
    display_phone_number: row.display_phone_number,
    business_account_id: row.business_account_id,
    status: row.status,
    is_default: row.is_default,
    has_credentials: Boolean(row.credentials_encrypted),
    created_at: new Date(row.created_at).toISOString(),
    updated_at: new Date(row.updated_at).toISOString(),
  };
}
