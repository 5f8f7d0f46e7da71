import { Injectable } from '@nestjs/common';
import { OnBusMessage } from '@touchpoint/bus';
import { type BusMessage, MessagingEvents, OutboxCommands, type OutboxSuppressionData, type SuppressionRequestedData } from '@touchpoint/contracts';
import type { Tx } from '@touchpoint/database';
import { AppError, ErrorCode } from '@touchpoint/errors';
import { SuppressionsService } from './suppressions.service.js';

/**
 * Bus edge of the do-not-contact list: outreach's `outbox.suppress` / `outbox.unsuppress` commands
 * and messaging's `messaging.suppression.requested` (one per address of a contact that opted out),
 * all through `SuppressionsService`. A duplicate delivery is skipped by the inbox, and `add` is
 * idempotent besides.
 */
@Injectable()
export class SuppressionsConsumer {
  constructor(private readonly suppressions: SuppressionsService) {}

  @OnBusMessage(OutboxCommands.Suppress)
  async onSuppress(message: BusMessage<OutboxSuppressionData>, tx: Tx): Promise<void> {
    await this.suppressions.add(withOrganization(message), tx);
  }

  @OnBusMessage(OutboxCommands.Unsuppress)
  async onUnsuppress(message: BusMessage<OutboxSuppressionData>, tx: Tx): Promise<void> {
    await this.suppressions.remove(withOrganization(message), tx);
  }

  /** Messaging saw an opt-out (seed 003 "stop means stop on every channel"). */
  @OnBusMessage(MessagingEvents.SuppressionRequested)
  async onSuppressionRequested(message: BusMessage<SuppressionRequestedData>, tx: Tx): Promise<void> {
    const d = message.data;
    try {
      await this.suppressions.add({ organization_id: message.organization_id ?? '', channel: d?.channel, value: d?.value, reason: d?.reason ?? 'opt_out' }, tx);
    } catch (err) {
      // An address that cannot be keyed fails the same way every time: straight to the dead letters.
      if (err instanceof AppError && (err.code === ErrorCode.ValidationFailed || err.code === ErrorCode.InvalidRecipient)) throw new AppError(ErrorCode.InvalidMessage, err.message, { event_id: message.event_id });
      throw err;
    }
  }
}

function withOrganization(message: BusMessage<OutboxSuppressionData>): OutboxSuppressionData {
  return { ...message.data, organization_id: message.data?.organization_id ?? message.organization_id ?? '' };
}
