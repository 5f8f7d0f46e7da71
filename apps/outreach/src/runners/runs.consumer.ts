import { Injectable } from '@nestjs/common';
import { OnBusMessage } from '@touchpoint/bus';
import { type ActionApprovedData, type BusMessage, type DecisionRequestedData, OutreachEvents } from '@touchpoint/contracts';
import type { Tx } from '@touchpoint/database';
import { AppError, ErrorCode } from '@touchpoint/errors';
import { Clock } from '@touchpoint/time';
import { RunnerService } from './runner.service.js';
import { RunsRepository } from './runs.repository.js';

/**
 * Bus edge of the runners: records one run per event, keyed by the event id (its cause), in the
 * inbox transaction, and wakes a loop. Nothing slow happens here: the handler's transaction never
 * waits on a model or another service.
 */
@Injectable()
export class RunsConsumer {
  constructor(
    private readonly runs: RunsRepository,
    private readonly runner: RunnerService,
    private readonly clock: Clock,
  ) {}

  @OnBusMessage(OutreachEvents.DecisionRequested)
  async onDecisionRequested(message: BusMessage<DecisionRequestedData>, tx: Tx): Promise<void> {
    const data = message.data;
    if (!message.organization_id || typeof data?.enrollment_id !== 'string' || typeof data.reason !== 'string') throw new AppError(ErrorCode.InvalidMessage, 'decision.requested needs organization_id, enrollment_id and reason');
    await this.runs.enqueue(tx, { run_key: message.event_id, kind: 'decision', organization_id: message.organization_id, subject_id: data.enrollment_id, input: { ...data }, now: this.clock.now() });
    setTimeout(() => this.runner.wake(), 20);
  }

  @OnBusMessage(OutreachEvents.ActionApproved)
  async onActionApproved(message: BusMessage<ActionApprovedData>, tx: Tx): Promise<void> {
    const data = message.data;
    if (!message.organization_id || typeof data?.action_id !== 'string') throw new AppError(ErrorCode.InvalidMessage, 'action.approved needs organization_id and action_id');
    await this.runs.enqueue(tx, { run_key: message.event_id, kind: 'execution', organization_id: message.organization_id, subject_id: data.action_id, input: { ...data }, now: this.clock.now() });
    setTimeout(() => this.runner.wake(), 20);
  }
}
