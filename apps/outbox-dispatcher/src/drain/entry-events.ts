import { type OutboxEntryEventData, OutboxEvents, type OutgoingMessage } from '@touchpoint/contracts';
import type { EntryRow } from './outbox.repository.js';

type EntryEventType = (typeof OutboxEvents)['EntryAccepted' | 'EntryFailed' | 'EntryAmbiguous' | 'EntryCancelled' | 'EntryResolved'];

/**
 * An `outbox.entry.*` event for a row. The id is `<type>:<entry id>`: each entry reaches each
 * outcome once, so a retried transaction or a replay publishes nothing new (DESIGN §2).
 */
export function entryEvent(type: EntryEventType, row: EntryRow, extra: Partial<OutboxEntryEventData> = {}): OutgoingMessage {
  const data: OutboxEntryEventData = {
    entry_id: row.id,
    idempotency_key: row.idempotency_key,
    channel: row.channel,
    to: row.recipient,
    sender_id: row.sender_id,
    payload_type: row.payload_type,
    provider_message_id: row.provider_message_id,
    classification: row.last_classification,
    error_code: row.last_error_code,
    error_message: row.last_error_message,
    http_status: row.last_http_status,
    error_subcode: row.last_error_subcode ?? null,
    error_details: row.last_error_details ?? null,
    attempts: row.attempts,
    log_context: row.log_context ?? {},
    ...extra,
  };
  return { event_id: `${type}:${row.id}`, type, organization_id: row.organization_id, data: data };
}
