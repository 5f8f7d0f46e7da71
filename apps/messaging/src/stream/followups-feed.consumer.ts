import { Injectable } from '@nestjs/common';
import { OnBusMessage } from '@touchpoint/bus';
import { type BusMessage, FollowupsEvents, type FollowupsEnrollmentCreatedData, type FollowupsEnrollmentFinishedData, type FollowupsHandoffRequestedData } from '@touchpoint/contracts';
import type { Tx } from '@touchpoint/database';
import { StreamRepository } from './stream.repository.js';

/**
 * Puts followups' enrollment facts on the real-time feed (GET /events/stream), beside the
 * conversation they concern, so a live inbox sees a flow start, finish, or hand the contact to a
 * person (seed 004 "Real-time": conversation handoff) without polling followups. The item's data
 * is the event's own payload (ids and small facts, DESIGN §2); nothing else is stored here.
 */
@Injectable()
export class FollowupsFeedConsumer {
  constructor(private readonly stream: StreamRepository) {}

  @OnBusMessage(FollowupsEvents.EnrollmentCreated)
  async onCreated(message: BusMessage<FollowupsEnrollmentCreatedData>, tx: Tx): Promise<void> {
    await this.append(message, tx);
  }

  @OnBusMessage(FollowupsEvents.EnrollmentFinished)
  async onFinished(message: BusMessage<FollowupsEnrollmentFinishedData>, tx: Tx): Promise<void> {
    await this.append(message, tx);
  }

  /** A flow step asked for a person: the inbox shows the conversation as handed off. */
  @OnBusMessage(FollowupsEvents.HandoffRequested)
  async onHandoffRequested(message: BusMessage<FollowupsHandoffRequestedData>, tx: Tx): Promise<void> {
    await this.append(message, tx);
  }

  private async append(message: BusMessage<object>, tx: Tx): Promise<void> {
    // Events without a tenant cannot be shown to anyone.
    if (!message.organization_id) return;
    await this.stream.append(tx, message.organization_id, message.type, message.data ?? {});
  }
}
