import { Inject, Injectable } from '@nestjs/common';
import { BeforeBusBatch, OnBusMessage } from '@touchpoint/bus';
import { type BusMessage, type OutboxCancelData, OutboxCommands, type OutboxEnqueueData, type OutboxEntryEventData, OutboxEvents } from '@touchpoint/contracts';
import type { Tx } from '@touchpoint/database';
import { AppError, ErrorCode } from '@touchpoint/errors';
import type { Logger } from '@touchpoint/observability';
import { LOGGER } from '@touchpoint/runtime';
import { DrainService } from '../drain/drain.service.js';
import { EnqueueService } from './enqueue.service.js';

/**
 * Codes that say the command itself is wrong: retrying cannot help, so nothing is queued and the
 * requester is told by an `outbox.entry.failed` with no entry (the enqueue stage of seed 004).
 */
const REJECTED = new Set<string>([ErrorCode.ValidationFailed, ErrorCode.InvalidPayload, ErrorCode.InvalidRecipient, ErrorCode.UnsupportedChannel, ErrorCode.SenderNotFound, ErrorCode.SenderDisconnected]);

/** Bus edge of the outbox: the `outbox.enqueue` and `outbox.cancel` commands (suppressions: `SuppressionsConsumer`). */
@Injectable()
export class EnqueueConsumer {
  constructor(
    private readonly enqueueService: EnqueueService,
    private readonly drain: DrainService,
    @Inject(LOGGER) private readonly logger: Logger,
  ) {}

  /**
   * A batch of enqueues locks all its keys, reads their entries, senders and cancels in advance and
   * upserts their pairs up front, a statement each (`EnqueueService.prepareBatch`); each handler
   * then writes its entry alone. A rejected command is rejected by its handler, the others go on.
   */
  @BeforeBusBatch(OutboxCommands.Enqueue)
  prepareEnqueues(messages: BusMessage<OutboxEnqueueData>[], tx: Tx): Promise<void> {
    return this.enqueueService.prepareBatch(messages.map(enqueueDataOf), tx);
  }

  /** A batch of cancels locks its keys in the order an enqueue batch does (`EnqueueService.lockCancelBatch`). */
  @BeforeBusBatch(OutboxCommands.Cancel)
  lockCancels(messages: BusMessage<OutboxCancelData>[], tx: Tx): Promise<void> {
    return this.enqueueService.lockCancelBatch(messages.map(cancelDataOf), tx);
  }

  @OnBusMessage(OutboxCommands.Enqueue)
  async onEnqueue(message: BusMessage<OutboxEnqueueData>, tx: Tx): Promise<void> {
    const data = enqueueDataOf(message);
    try {
      await this.enqueueService.enqueue(data, tx);
    } catch (err) {
      if (err instanceof AppError && REJECTED.has(err.code)) {
        // Enqueue failure ≠ delivery failure (seed 004): nothing was queued, and the log says so.
        this.logger.error(
          { event: 'outbox.enqueue_failed', organization_id: data.organization_id, idempotency_key: data.idempotency_key, code: err.code, details: err.details, requester: data.requester, ...(data.log_context ?? {}) },
          'outbox.enqueue command rejected; nothing queued',
        );
        // The requester learns it the same way as a delivery failure, so its row never stays queued.
        const failed: OutboxEntryEventData = {
          entry_id: '',
          idempotency_key: String(data.idempotency_key ?? ''),
          channel: data.channel,
          to: String(data.to ?? ''),
          sender_id: data.sender_id ?? null,
          payload_type: data.payload?.type,
          classification: null,
          error_code: err.code,
          error_message: err.message,
          attempts: 0,
          log_context: data.log_context ?? {},
        };
        await tx.publish({
          event_id: `${OutboxEvents.EntryFailed}:rejected:${data.organization_id}:${data.idempotency_key}`,
          type: OutboxEvents.EntryFailed,
          organization_id: data.organization_id || null,
          data: failed,
        });
        return;
      }
      throw err;
    }
    // The NOTIFY sent at commit wakes every replica; this covers the (rare) lost notification.
    setTimeout(() => this.drain.wake(), 20).unref();
  }

  @OnBusMessage(OutboxCommands.Cancel)
  async onCancel(message: BusMessage<OutboxCancelData>, tx: Tx): Promise<void> {
    await this.enqueueService.cancel(cancelDataOf(message), tx);
  }
}

/** A command's data with the message's organization when the data names none. */
function enqueueDataOf(message: BusMessage<OutboxEnqueueData>): OutboxEnqueueData {
  return { ...message.data, organization_id: message.data?.organization_id ?? message.organization_id ?? '' };
}

function cancelDataOf(message: BusMessage<OutboxCancelData>): OutboxCancelData {
  return { ...message.data, organization_id: message.data?.organization_id ?? message.organization_id ?? '' };
}
