import { Inject, Injectable } from '@nestjs/common';
import type { WhatsAppWebhookErrorBatch } from '@touchpoint/contracts';
import { AppError, ErrorCode } from '@touchpoint/errors';
import type { Logger } from '@touchpoint/observability';
import { APP_CONFIG, LOGGER, UnitOfWork } from '@touchpoint/runtime';
import { truncateText } from '@touchpoint/text';
import { Clock } from '@touchpoint/time';
import { OutboxRepository } from '../drain/outbox.repository.js';
import type { OutboxDispatcherConfig } from '../outbox-dispatcher.config.js';
import { SendersRepository } from './senders.repository.js';

/**
 * Codes of a webhook-level error that mean "this number sends too fast" (seed 004 "Error
 * classification": the rate-limited class, less the per-pair 131056, which names no pair here).
 */
const NUMBER_RATE_LIMIT_CODES = new Set([130429, 80007]);

/**
 * The webhook-level `value.errors[]` of Meta's messages webhook: errors about the business number
 * itself, with no message or status attached (Meta's "errors messages webhook" reference). Each is
 * stored; a rate-limit one slows every queued and new send of that number
 * (`WHATSAPP_ASYNC_RATE_LIMIT_PAUSE_MS`), as a synchronous 130429 would have.
 */
@Injectable()
export class WebhookErrorsService {
  constructor(
    private readonly uow: UnitOfWork,
    private readonly senders: SendersRepository,
    private readonly outbox: OutboxRepository,
    private readonly clock: Clock,
    @Inject(LOGGER) private readonly logger: Logger,
    @Inject(APP_CONFIG) private readonly config: OutboxDispatcherConfig,
  ) {}

  /**
   * Stores the errors of one change durably (the gateway answers Meta only after this returns).
   * @returns how many were stored, and the number's pause (ISO-8601 UTC) when one is in force
   * @throws AppError validation_failed (no phone_number_id or errors)
   */
  async record(batch: WhatsAppWebhookErrorBatch): Promise<{ stored: number; paused_until: string | null }> {
    if (typeof batch?.phone_number_id !== 'string' || !Array.isArray(batch.errors)) throw new AppError(ErrorCode.ValidationFailed, 'phone_number_id and errors are required');
    return this.uow.run(async (tx) => {
      const now = this.clock.now();
      const sender = await this.senders.findByPhoneNumberId(tx, batch.phone_number_id);
      let stored = 0;
      let pausedUntil: Date | null = null;
      for (const error of batch.errors) {
        const code = Number(error?.code);
        if (!Number.isInteger(code)) continue;
        const pause = sender && NUMBER_RATE_LIMIT_CODES.has(code) ? await this.senders.pauseUntil(tx, sender.id, new Date(now.getTime() + this.config.WHATSAPP_ASYNC_RATE_LIMIT_PAUSE_MS)) : null;
        await this.senders.recordWebhookError(tx, {
          organizationId: sender?.organization_id ?? null,
          senderId: sender?.id ?? null,
          phoneNumberId: batch.phone_number_id,
          code,
          title: textOf(error.title ?? error.message),
          details: textOf(error.error_data?.details),
          body: JSON.stringify(error),
          pausedUntil: pause,
          receivedAt: now,
        });
        stored++;
        if (pause) pausedUntil = pause;
      }
      if (sender && pausedUntil) {
        await this.outbox.delaySender(tx, sender.id, pausedUntil);
        this.logger.warn(
          { event: 'outbox.whatsapp_number_rate_limited', organization_id: sender.organization_id, sender_id: sender.id, phone_number_id: batch.phone_number_id, paused_until: pausedUntil.toISOString() },
          'Meta reported the number over its throughput; its sends are slowed',
        );
      }
      return { stored, paused_until: pausedUntil ? pausedUntil.toISOString() : null };
    });
  }
}

const textOf = (v: unknown): string | null => (typeof v === 'string' && v !== '' ? truncateText(v, 1000) : null);
