import { Controller } from '@nestjs/common';
import { Payload } from '@nestjs/microservices';
import { type OutboxCancelData, type OutboxEnqueueData, type OutboxEntriesByKeyData, OutboxRpc, type WhatsAppStatusBatch, type WhatsAppWebhookErrorBatch } from '@touchpoint/contracts';
import { OnRpc } from '@touchpoint/runtime';
import { ResolutionService } from '../ambiguous/resolution.service.js';
import { DrainService } from '../drain/drain.service.js';
import { WebhookErrorsService } from '../senders/webhook-errors.service.js';
import { EnqueueService } from './enqueue.service.js';

/** RPC edge of the outbox: enqueue, cancel, entries, provider statuses (ambiguous triage: `AmbiguousController`). */
@Controller()
export class EnqueueController {
  constructor(
    private readonly enqueueService: EnqueueService,
    private readonly resolution: ResolutionService,
    private readonly drain: DrainService,
    private readonly webhookErrorsService: WebhookErrorsService,
  ) {}

  @OnRpc(OutboxRpc.Enqueue)
  async enqueue(@Payload() data: OutboxEnqueueData) {
    const result = await this.enqueueService.enqueue(data);
    if (result.created) this.drain.wake();
    return result;
  }

  @OnRpc(OutboxRpc.Cancel)
  cancel(@Payload() data: OutboxCancelData) {
    return this.enqueueService.cancel(data);
  }

  @OnRpc(OutboxRpc.GetEntry)
  get(@Payload() data: { organization_id: string; entry_id: string }) {
    return this.enqueueService.get(data?.organization_id, data?.entry_id);
  }

  @OnRpc(OutboxRpc.GetEntriesByKey)
  byKeys(@Payload() data: OutboxEntriesByKeyData) {
    return this.enqueueService.getByKeys(data);
  }

  @OnRpc(OutboxRpc.WhatsAppStatuses)
  statuses(@Payload() data: WhatsAppStatusBatch) {
    return this.resolution.recordWhatsAppStatuses(data);
  }

  @OnRpc(OutboxRpc.WhatsAppWebhookErrors)
  recordWebhookErrors(@Payload() data: WhatsAppWebhookErrorBatch) {
    return this.webhookErrorsService.record(data);
  }
}
