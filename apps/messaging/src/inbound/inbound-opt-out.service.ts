import { Inject, Injectable } from '@nestjs/common';
import type { OutboxSuppressionData } from '@touchpoint/contracts';
import type { Logger } from '@touchpoint/observability';
import { toRecipientKey } from '@touchpoint/phone';
import { LOGGER, putSuppressionsInForce, RpcClient, type SuppressionValue, UnitOfWork } from '@touchpoint/runtime';
import { Clock } from '@touchpoint/time';
import { ContactsRepository } from '../contacts/contacts.repository.js';

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
    const addresses = new Map<string, SuppressionValue>();
    for (const [c, value] of [
      [channel, from],
      ['whatsapp', contact?.phone],
      ['email', contact?.email],
      ['linkedin', contact?.linkedin_provider_id],
    ] as const) {
      // Keyed as the list keys them: the number it came from and the contact's stored phone are one address.
      if (value && isSuppressible(c)) addresses.set(`${c}|${toRecipientKey(c, value) ?? value}`, { channel: c, value });
    }
    await this.suppressNow(organizationId, [...addresses.values()]);
  }

  /**
   * Puts the addresses on the dispatcher's do-not-contact list and waits until each is committed
   * (`putSuppressionsInForce`; seed 003 "stop means stop"; DESIGN §5.3 the reply wins): from the
   * moment the webhook is acknowledged, nothing queued or sent later to them starts a wire attempt.
   * @throws AppError service_unavailable when the dispatcher did not confirm (the provider redelivers;
   *   the stored message is a duplicate then and the suppression is asked again)
   */
  private async suppressNow(organizationId: string, values: SuppressionValue[]): Promise<void> {
    const added = await putSuppressionsInForce(this.rpc, organizationId, values, 'opt_out', (v, err) =>
      this.logger.error({ event: 'messaging.opt_out_suppression_failed', organization_id: organizationId, channel: v.channel, err: (err as Error)?.message }, 'opt-out not yet in force at the dispatcher; asking the provider to redeliver'),
    );
    for (const a of added) if (a.created) this.logger.info({ event: 'messaging.opt_out_suppressed', organization_id: organizationId, channel: a.channel, cancelled: a.cancelled_entry_ids.length }, 'opt-out address suppressed before the acknowledgement');
  }
}
