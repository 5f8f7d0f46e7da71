import { Inject, Injectable } from '@nestjs/common';
import { OutboxAccountRpc, type OutboxSuppressionData } from '@touchpoint/contracts';
import { AppError, ErrorCode } from '@touchpoint/errors';
import type { Logger } from '@touchpoint/observability';
import { toRecipientKey } from '@touchpoint/phone';
import { LOGGER, RpcClient, UnitOfWork } from '@touchpoint/runtime';
import { Clock } from '@touchpoint/time';
import { ContactsRepository } from '../contacts/contacts.repository.js';

/**
 * Deadline of the dispatcher call that puts an opt-out's address on the do-not-contact list before
 * the webhook is acknowledged, ms. With the email header read
 * (`EMAIL_HEADER_READ_ATTEMPTS`, inbound-record.service.ts) it stays inside the gateway's 5 s.
 */
export const OPT_OUT_SUPPRESSION_TIMEOUT_MS = 1500;

/** Channels whose addresses the dispatcher's do-not-contact list keys. */
const SUPPRESSIBLE_CHANNELS = new Set<string>(['whatsapp', 'email', 'linkedin'] satisfies OutboxSuppressionData['channel'][]);
const isSuppressible = (channel: string): channel is OutboxSuppressionData['channel'] => SUPPRESSIBLE_CHANNELS.has(channel);

/**
 * The opt-out an inbound message carries, put in force before its webhook is acknowledged: called
 * by receipt acceptance (`InboundReceiptsService.accept`, WhatsApp) and by the `record` RPC of the
 * other channels (`InboundService.record`).
 */
@Injectable()
export class InboundOptOutService {
  constructor(
    private readonly uow: UnitOfWork,
    private readonly contactsRepository: ContactsRepository,
    private readonly rpc: RpcClient,
    private readonly clock: Clock,
    @Inject(LOGGER) private readonly logger: Logger,
  ) {}

  /**
   * What an opt-out must have done by the time its webhook is acknowledged (DESIGN §5.3; seed 003
   * "stop means stop on every channel"): the contact it came from is marked opted out, so messaging
   * refuses any new send to it on any channel, and the address it came from and every address the
   * contact has are on the dispatcher's list, so nothing already queued to them starts its attempt.
   * The receipt worker still runs the whole stop later (events to followups and outreach); each
   * step here is idempotent with it.
   * @throws AppError service_unavailable (see `suppressNow`)
   */
  async optOutNow(organizationId: string, channel: string, from: string): Promise<void> {
    const key = toRecipientKey(channel, from);
    const contact = !key
      ? null
      : await this.uow.run(async (tx) => {
          const found =
            channel === 'whatsapp'
              ? await this.contactsRepository.findByPhoneKey(tx, organizationId, key)
              : channel === 'email'
                ? await this.contactsRepository.findByEmailKey(tx, organizationId, key)
                : channel === 'linkedin'
                  ? await this.contactsRepository.findByLinkedinId(tx, organizationId, key)
                  : null;
          if (found) await this.contactsRepository.markOptedOut(tx, found.id, this.clock.now());
          return found;
        });
    const addresses = new Map<string, [string, string]>([[`${channel}|${from}`, [channel, from]]]);
    for (const [c, value] of [
      ['whatsapp', contact?.phone],
      ['email', contact?.email],
      ['linkedin', contact?.linkedin_provider_id],
    ] as const) {
      if (value) addresses.set(`${c}|${value}`, [c, value]);
    }
    for (const [c, value] of addresses.values()) await this.suppressNow(organizationId, c, value);
  }

  /**
   * Puts the address an opt-out came from on the dispatcher's do-not-contact list and waits until
   * it is committed (seed 003 "stop means stop"; DESIGN §5.3 the reply wins): from the moment the
   * webhook is acknowledged, nothing queued or sent later to that address starts a wire attempt.
   * @throws AppError service_unavailable when the dispatcher did not confirm (the provider redelivers;
   *   the stored message is a duplicate then and the suppression is asked again)
   */
  private async suppressNow(organizationId: string, channel: string, value: string): Promise<void> {
    if (!isSuppressible(channel) || !value) return;
    try {
      const added = await this.rpc.call('outbox-dispatcher', OutboxAccountRpc.SuppressionAdd, { organization_id: organizationId, channel, value, reason: 'opt_out' }, OPT_OUT_SUPPRESSION_TIMEOUT_MS);
      if (added.created) this.logger.info({ event: 'messaging.opt_out_suppressed', organization_id: organizationId, channel, cancelled: added.cancelled_entry_ids.length }, 'opt-out address suppressed before the acknowledgement');
    } catch (err) {
      // An address the list cannot key (not a phone, not an email) has nothing to suppress.
      if (err instanceof AppError && (err.code === ErrorCode.InvalidRecipient || err.code === ErrorCode.ValidationFailed)) return;
      this.logger.error({ event: 'messaging.opt_out_suppression_failed', organization_id: organizationId, channel, err: (err as Error).message }, 'opt-out not yet in force at the dispatcher; asking the provider to redeliver');
      throw new AppError(ErrorCode.ServiceUnavailable, 'the opt-out could not be put in force yet; retry');
    }
  }
}
