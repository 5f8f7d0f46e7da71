import { Injectable } from '@nestjs/common';
import { OnBusMessage } from '@touchpoint/bus';
import { type AbuseActionEventData, AbuseEvents, type BusMessage } from '@touchpoint/contracts';
import type { Tx } from '@touchpoint/database';
import { AppError, ErrorCode } from '@touchpoint/errors';
import { Clock } from '@touchpoint/time';
import { StreamRepository } from '../stream/stream.repository.js';
import { RestrictionsRepository } from './restrictions.repository.js';

/** Keeps the read model of abuse penalties and shows them on the real-time feed. */
@Injectable()
export class RestrictionsConsumer {
  constructor(
    private readonly repository: RestrictionsRepository,
    private readonly stream: StreamRepository,
    private readonly clock: Clock,
  ) {}

  @OnBusMessage(AbuseEvents.ActionApplied)
  async onApplied(message: BusMessage<AbuseActionEventData>, tx: Tx): Promise<void> {
    await this.apply(message, tx);
  }

  @OnBusMessage(AbuseEvents.ActionExpired)
  async onExpired(message: BusMessage<AbuseActionEventData>, tx: Tx): Promise<void> {
    await this.apply(message, tx);
  }

  private async apply(message: BusMessage<AbuseActionEventData>, tx: Tx): Promise<void> {
    const action = message.data?.action;
    if (!action?.action_id || !action.contact_id || !action.organization_id) throw new AppError(ErrorCode.InvalidMessage, 'abuse action event without an action');
    await this.repository.upsert(tx, action, this.clock.now());
    await this.stream.append(tx, action.organization_id, message.type, { action });
  }
}
