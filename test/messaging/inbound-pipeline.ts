import type { INestApplicationContext } from '@nestjs/common';
import type { WhatsAppInboundBatch } from '@touchpoint/contracts';
import { contactNames, InboundReceiptsService } from '../../apps/messaging/src/inbound/inbound-receipts.service.js';
import { InboundService } from '../../apps/messaging/src/inbound/inbound.service.js';
import { unusableWhatsAppMessage } from '../../apps/messaging/src/inbound/whatsapp-message.js';

/** What became of the messages of one webhook change. */
export interface InboundResult {
  stored: number;
  duplicates: number;
  denied: number;
  ignored: number;
}

/** See `inboundPipeline`. */
export interface InboundPipeline {
  /** @throws AppError service_unavailable when a message could not be stored or judged */
  whatsapp(batch: WhatsAppInboundBatch & { organization_id?: string }): Promise<InboundResult>;
}

/**
 * Messaging's inbound pipeline without receipts or the receipt worker, for tests that need a
 * message stored (or denied) by the time the call returns. `whatsapp` takes the messages of one
 * Meta webhook change at once, in order: what the worker does one receipt at a time.
 * @param app a running messaging application
 */
export function inboundPipeline(app: INestApplicationContext): InboundPipeline {
  const receipts = app.get(InboundReceiptsService);
  const inbound = app.get(InboundService);
  return {
    async whatsapp(batch) {
      const result: InboundResult = { stored: 0, duplicates: 0, denied: 0, ignored: 0 };
      const owner = await receipts.ownerOf(batch, result);
      if (!owner) return result;
      const names = contactNames(batch.contacts);
      for (const raw of batch.messages) {
        if (unusableWhatsAppMessage(raw)) {
          result.ignored++;
          continue;
        }
        const outcome = await inbound.takeWhatsApp(raw, owner.organization_id, owner.sender_id, names.get(raw.from) ?? null);
        result[outcome === 'stored' ? 'stored' : outcome === 'duplicate' ? 'duplicates' : outcome === 'denied' ? 'denied' : 'ignored']++;
      }
      return result;
    },
  };
}
