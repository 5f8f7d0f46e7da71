import { Controller, Injectable } from '@nestjs/common';
import { Payload } from '@nestjs/microservices';
import { BeforeBusBatch, OnBusMessage } from '@touchpoint/bus';
import { type BusMessage, MessagingCommands, MessagingRpc, type MessagingSendData, type MessagingChannel, type WhatsAppStatusBatch } from '@touchpoint/contracts';
import type { Tx } from '@touchpoint/database';
import { AppError, isRetryable } from '@touchpoint/errors';
import { UnitOfWork, OnRpc } from '@touchpoint/runtime';
import { OutcomesService } from './outcomes.service.js';
import { SendService } from './send.service.js';

/** RPC edge of the shared send path, and the statuses RPC for an ingress that forwards them here. */
@Controller()
export class SendController {
  constructor(
    private readonly sends: SendService,
    private readonly outcomes: OutcomesService,
    private readonly uow: UnitOfWork,
  ) {}

  @OnRpc(MessagingRpc.Send)
  send(@Payload() data: MessagingSendData) {
    return this.sends.send(data);
  }

  /** `WhatsAppStatusBatch` + `organization_id` → counts; answered after the statuses are stored (one lookup and one update for the batch). */
  @OnRpc(MessagingRpc.WhatsAppStatuses)
  async statuses(@Payload() data: WhatsAppStatusBatch & { organization_id: string }) {
    const counts = { applied: 0, ignored: 0, pending: 0 };
    const items = (data.statuses ?? []).map((s) => ({
      report: {
        organization_id: data.organization_id,
        channel: 'whatsapp' as MessagingChannel,
        external_id: s.id,
        status: s.status,
        at: new Date(Number(s.timestamp) * 1000),
        error_code: s.errors?.[0]?.code !== undefined ? String(s.errors[0].code) : null,
        error_message: s.errors?.[0]?.message ?? s.errors?.[0]?.title ?? null,
      },
      hint: null,
    }));
    const outcomes = await this.uow.run((tx) => this.outcomes.applyStatuses(tx, items));
    for (const outcome of outcomes) counts[outcome]++;
    return counts;
  }
}

/** Bus edge of the `messaging.send` command (followups, outreach and others send this way). */
@Injectable()
export class SendConsumer {
  constructor(private readonly sends: SendService) {}

  /**
   * A batch of sends reads, locks and writes for all of them up front, a statement per step
   * (`SendService.prepareBatch`); each handler then writes its events. A refused command is
   * refused by its handler, the others go on.
   */
  @BeforeBusBatch(MessagingCommands.Send)
  prepareSends(messages: BusMessage<MessagingSendData>[], tx: Tx): Promise<void> {
    return this.sends.prepareBatch(tx, messages.map(sendDataOf));
  }

  @OnBusMessage(MessagingCommands.Send)
  async onSend(message: BusMessage<MessagingSendData>, tx: Tx): Promise<void> {
    const data = sendDataOf(message);
    try {
      await this.sends.sendInTx(tx, data);
    } catch (err) {
      if (err instanceof AppError && !isRetryable(err)) {
        // A command that can never be written: tell the requester instead of retrying it forever.
        this.sends.logEnqueueFailure(data, err);
        await tx.publish(this.sends.failedCommandEvent(data, err));
        return;
      }
      throw err;
    }
  }
}

/** A command's data with the message's organization (the data's own when the message names none). */
function sendDataOf(message: BusMessage<MessagingSendData>): MessagingSendData {
  return { ...message.data, organization_id: message.organization_id ?? message.data?.organization_id };
}
