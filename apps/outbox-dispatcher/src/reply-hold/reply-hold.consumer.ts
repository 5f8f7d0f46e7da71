import { Inject, Injectable } from '@nestjs/common';
import { OnBusMessage } from '@touchpoint/bus';
import { type BusMessage, type InboundAcknowledgedData, MessagingEvents } from '@touchpoint/contracts';
import type { Tx } from '@touchpoint/database';
import type { Logger } from '@touchpoint/observability';
import { toRecipientKey } from '@touchpoint/phone';
import { APP_CONFIG, LOGGER } from '@touchpoint/runtime';
import { Clock } from '@touchpoint/time';
import type { OutboxDispatcherConfig } from '../outbox-dispatcher.config.js';
import { ReplyHoldRepository } from './reply-hold.repository.js';

const HELD_CHANNELS = new Set(['whatsapp', 'email', 'linkedin']);

/**
 * The reply hold (DESIGN §5.3 "the reply wins"): messaging tells, from the transaction
 * that acknowledges a person's message, that this person just wrote
 * (`messaging.inbound.acknowledged`); the pending sends of the organization to that address on
 * that channel that stop on a reply (`stop_on_reply`: a cancel_on_reply follow-up, an outreach
 * send) are not claimed before `acknowledged_at + OUTBOX_REPLY_HOLD_MS`. Whether it was a reply
 * is not judged here: the requester still decides, and its `outbox.cancel` cancels the entry as
 * always; with no cancel, the entry goes when the hold ends. Every sender of the organization is
 * held, not only the number written to: the requester's stop covers the person, not a number.
 * A redelivery is dropped by the inbox and harmless besides (`ReplyHoldRepository.hold`); a hold
 * that comes after the cancel, or after the claim, finds nothing pending to hold.
 */
@Injectable()
export class ReplyHoldConsumer {
  constructor(
    private readonly repository: ReplyHoldRepository,
    private readonly clock: Clock,
    @Inject(APP_CONFIG) private readonly config: OutboxDispatcherConfig,
    @Inject(LOGGER) private readonly logger: Logger,
  ) {}

  @OnBusMessage(MessagingEvents.InboundAcknowledged)
  async onAcknowledged(message: BusMessage<InboundAcknowledgedData>, tx: Tx): Promise<void> {
    const holdMs = this.config.OUTBOX_REPLY_HOLD_MS;
    const d = message.data;
    const organizationId = message.organization_id ?? '';
    if (holdMs <= 0 || !organizationId || !d || !HELD_CHANNELS.has(d.channel) || typeof d.from !== 'string') return;
    const key = toRecipientKey(d.channel, d.from);
    // An address the dispatcher cannot key has no entries to hold.
    if (!key) return;
    const now = this.clock.now();
    const acknowledged = Date.parse(d.acknowledged_at);
    // From the acknowledgement (a late event holds for what is left), never from a clock ahead of ours.
    const from = Number.isFinite(acknowledged) ? Math.min(acknowledged, now.getTime()) : now.getTime();
    const until = new Date(from + holdMs);
    if (until.getTime() <= now.getTime()) return;
    const held = await this.repository.hold(tx, organizationId, d.channel, key, until);
    if (held.length) this.logger.info({ event: 'outbox.reply_hold', organization_id: organizationId, channel: d.channel, held_until: until.toISOString(), entry_ids: held }, 'sends that stop on a reply held after the person wrote');
  }
}
