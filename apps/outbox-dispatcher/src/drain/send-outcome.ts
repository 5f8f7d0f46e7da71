import type { OutboxPayloadType } from '@touchpoint/contracts';
import { type BackoffPolicy, type Classified, retryDelayMs } from '../classification/classification.js';
import { type ProviderAdapter, ProviderCallError, type SendAccepted } from '../providers/provider-adapter.js';
import type { AttemptEnd, EntryTransition } from './attempts.repository.js';

/** A preparation failure that is not the provider's: the sender cannot send. */
export class SenderUnavailable extends Error {
  constructor(
    message: string,
    /** The dispatcher disconnected it after a 190: its entries fail `sender_token_invalid`. */
    readonly tokenInvalid = false,
  ) {
    super(message);
  }
}

/**
 * What a send's result writes (`DispatchService.recordOutcome`): the attempt's end and the entry's
 * transition — accepted; a retry after the backoff while attempts remain; parked ambiguous (never
 * for a read receipt); or failed — with the adapter's classification of a failure (null when accepted).
 * @param attempts the attempt number this send was
 * @param now the outcome's instant (the retry is due `retryDelayMs` after it)
 */
export function sendOutcome(
  entry: { max_attempts: number; payload_type: OutboxPayloadType },
  adapter: ProviderAdapter,
  attempts: number,
  result: { accepted: SendAccepted } | { error: unknown },
  now: Date,
  backoff: BackoffPolicy,
): { end: AttemptEnd; transition: EntryTransition; classified: Classified | null } {
  let end: AttemptEnd;
  let transition: EntryTransition;
  let classified: Classified | null = null;
  if ('accepted' in result) {
    end = { outcome: 'accepted', classification: null, providerCode: null, httpStatus: result.accepted.httpStatus, retryAfterMs: null, body: result.accepted.body };
    transition = { status: 'accepted', providerMessageId: result.accepted.providerMessageId, classification: null, errorCode: null, errorMessage: null, httpStatus: result.accepted.httpStatus };
  } else {
    const err = result.error;
    const wire = err instanceof ProviderCallError ? err : null;
    classified = adapter.classify(wire ? wire.failure : { kind: 'local' });
    const body = wire ? wire.body : { source: 'local_execution', message: (err as Error)?.message ?? String(err) };
    const code = wire ? wire.errorCode : 'local_execution';
    const message = (err as Error)?.message ?? String(err);
    const retryAfterMs = wire?.failure.kind === 'http' ? wire.failure.retryAfterMs : null;
    const httpStatus = wire?.httpStatus ?? null;
    const extras = { errorSubcode: wire?.detail.subcode ?? null, errorDetails: wire?.detail.details ?? null };
    const canRetry = classified.action === 'retry' && attempts < entry.max_attempts;
    if (canRetry) {
      const delay = retryDelayMs(backoff, attempts, classified.floorMs);
      end = { outcome: 'retry', classification: classified.classification, providerCode: code, httpStatus, retryAfterMs, body };
      transition = { status: 'pending', nextAttemptAt: new Date(now.getTime() + delay), classification: classified.classification, errorCode: code, errorMessage: message, httpStatus, ...extras };
    } else if (classified.action === 'park_ambiguous' && entry.payload_type !== 'read_receipt') {
      end = { outcome: 'ambiguous', classification: classified.classification, providerCode: code, httpStatus, retryAfterMs, body };
      transition = { status: 'ambiguous', classification: classified.classification, errorCode: code, errorMessage: message, httpStatus, ...extras };
    } else {
      // Permanent, attempts exhausted, or a read receipt: a receipt has no value by the time a retry would run.
      end = { outcome: 'failed', classification: classified.classification, providerCode: code, httpStatus, retryAfterMs, body };
      transition = { status: 'failed', classification: classified.classification, errorCode: code, errorMessage: message, httpStatus, ...extras };
    }
  }
  return { end, transition, classified };
}

/**
 * How a preparation failure is classified (`DispatchService.preparationFailed`): a provider's error
 * by the adapter (an upload that timed out is retried: it sent no message), a sender that cannot
 * send, or a local error (both fail the entry).
 */
export function preparationFailure(err: unknown, adapter: ProviderAdapter | undefined): { classified: Classified; body: unknown; code: string | null; httpStatus: number | null } {
  let classified: Classified;
  let body: unknown;
  let code: string | null;
  const message = (err as Error)?.message ?? String(err);
  if (err instanceof ProviderCallError && adapter) {
    classified = adapter.classify(err.failure);
    // An upload that timed out sent no message: retrying it cannot duplicate one.
    if (classified.action === 'park_ambiguous') classified = { ...classified, classification: 'transient', action: 'retry' };
    body = err.body;
    code = err.errorCode;
  } else if (err instanceof SenderUnavailable) {
    classified = { classification: err.tokenInvalid ? 'sender_unauthorized' : 'sender_unavailable', action: 'fail', floorMs: 0, accountRestricted: false };
    body = { source: 'sender', message };
    code = err.tokenInvalid ? 'sender_token_invalid' : 'sender_unavailable';
  } else {
    classified = { classification: 'local_execution', action: 'fail', floorMs: 0, accountRestricted: false };
    body = { source: 'local_execution', message };
    code = 'local_execution';
  }
  const httpStatus = err instanceof ProviderCallError ? err.httpStatus : null;
  return { classified, body, code, httpStatus };
}
