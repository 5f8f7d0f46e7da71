import 'reflect-metadata';
import { BUS_HANDLER, BUS_HANDLER_FILTER, type BusMessageFilter } from '@touchpoint/bus';
import { type BusMessage, type OutboxEntryEventData, OutboxEvents } from '@touchpoint/contracts';
import { OutcomesConsumer } from '../outcomes.consumer.js';

/**
 * The entry outcomes messaging takes: every one but a read receipt's. A read receipt's log context
 * names the inbound message it marks read, which no outcome moves; taking its outcome cost a
 * transaction, an inbox row and a lock on that inbound row per inbound WhatsApp message.
 */
describe(`${OutcomesConsumer.name} filters`, () => {
  const handlers = ['onAccepted', 'onFailed', 'onCancelled', 'onAmbiguous', 'onResolved'] as const;
  const outcome = (type: string, data: Partial<OutboxEntryEventData>): BusMessage<OutboxEntryEventData> => ({
    event_id: `${type}:e-1`,
    type,
    organization_id: 'org-1',
    occurred_at: new Date().toISOString(),
    data: { entry_id: 'e-1', idempotency_key: 'k', channel: 'whatsapp', to: '5511999990000', log_context: { message_id: '0d6f4d0e-4f7e-4a43-9e4b-3f9c6a0c1b2a' }, ...data },
  });
  const filterOf = (method: (typeof handlers)[number]) => Reflect.getMetadata(BUS_HANDLER_FILTER, OutcomesConsumer.prototype[method]) as BusMessageFilter | undefined;

  it.each(handlers)('%s skips the outcome of a read receipt', (method) => {
    const type = Reflect.getMetadata(BUS_HANDLER, OutcomesConsumer.prototype[method]) as string;
    expect(filterOf(method)?.(outcome(type, { payload_type: 'read_receipt', idempotency_key: 'read:wamid.1' }))).toBe(false);
  });

  it.each(handlers)('%s takes the outcome of a text, a template and an outcome that names no payload type', (method) => {
    const type = Reflect.getMetadata(BUS_HANDLER, OutcomesConsumer.prototype[method]) as string;
    for (const data of [{ payload_type: 'text' as const }, { payload_type: 'template' as const }, {}]) expect(filterOf(method)?.(outcome(type, data)) ?? true).toBe(true);
  });

  it('filters every entry outcome type it handles', () => {
    expect(handlers.map((h) => Reflect.getMetadata(BUS_HANDLER, OutcomesConsumer.prototype[h])).sort()).toEqual([OutboxEvents.EntryAccepted, OutboxEvents.EntryFailed, OutboxEvents.EntryCancelled, OutboxEvents.EntryAmbiguous, OutboxEvents.EntryResolved].sort());
  });
});
