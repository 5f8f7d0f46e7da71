import { ACCEPTING_DELIVERY_STATUSES, REJECTING_DELIVERY_STATUSES } from '../ambiguous/resolution.service.js';
import type { AttemptEnd, EntryTransition } from './attempts.repository.js';
import type { Evidence } from './outbox.repository.js';

/**
 * The attempt end and entry transition that correlation evidence proves, or null when it proves
 * nothing (a status outside the allow-lists).
 */
export function settleByEvidence(evidence: Evidence, end: AttemptEnd): [AttemptEnd, EntryTransition] | null {
  const body = { source: 'evidence', evidence, wire: end.body };
  if (ACCEPTING_DELIVERY_STATUSES.has(evidence.status)) {
    return [
      { ...end, outcome: 'accepted', classification: null, body },
      { status: 'accepted', providerMessageId: evidence.provider_message_id || null, classification: null, errorCode: null, errorMessage: null, httpStatus: null },
    ];
  }
  if (REJECTING_DELIVERY_STATUSES.has(evidence.status)) {
    return [
      { ...end, outcome: 'failed', classification: 'permanent', body },
      { status: 'failed', classification: 'permanent', errorCode: 'provider_status_failed', errorMessage: 'the provider reported the send failed', httpStatus: null },
    ];
  }
  return null;
}

export function failure(classification: EntryTransition['classification'], code: string | null, message: string, httpStatus: number | null): EntryTransition {
  return { status: 'failed', classification, errorCode: code, errorMessage: message, httpStatus };
}
