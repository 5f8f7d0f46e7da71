import { Inject, Injectable } from '@nestjs/common';
import { OnBusMessage } from '@touchpoint/bus';
import { type BusMessage, type InboundAcknowledgedData, MessagingEvents } from '@touchpoint/contracts';
import { CommitBatch, type Tx } from '@touchpoint/database';
import type { Logger } from '@touchpoint/observability';
import { toRecipientKey } from '@touchpoint/phone';
import { APP_CONFIG, LOGGER } from '@touchpoint/runtime';
import { Clock } from '@touchpoint/time';
import type { OutboxDispatcherConfig } from '../outbox-dispatcher.config.js';
import { type ReplyHold, ReplyHoldRepository } from './reply-hold.repository.js';

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
 * that comes after the cancel, or after the claim, finds nothing pending to hold. The holds of one
 * consumer batch are written together right before its commit (one statement, not one per
 * message); they commit with the batch's inbox rows or not at all.
 */
@Injectable()
export class ReplyHoldConsumer {
  private readonly holds = new CommitBatch<ReplyHold>(async (tx, holds) => {
    const held = await this.repository.hold(tx, holds);
    const byHold = new Map<string, { organization_id: string; channel: string; until: Date; ids: string[] }>();
    for (const row of held) {
      const key = `${row.organization_id}|${row.channel}|${new Date(row.until).toISOString()}`;
      const entry = byHold.get(key) ?? { organization_id: row.organization_id, channel: row.channel, until: new Date(row.until), ids: [] };
      entry.ids.push(row.id);
      byHold.set(key, entry);
    }
    for (const h of byHold.values()) this.logger.info({ event: 'outbox.reply_hold', organization_id: h.organization_id, channel: h.channel, held_until: h.until.toISOString(), entry_ids: h.ids }, 'sends that stop on a reply held after the person wrote');
  });

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
    this.holds.add(tx, { organizationId, channel: d.channel, pacingKey: key, until });
  }
}
