import type { BusPayload, BusType } from './wire.js';

/**
 * A message on the bus: an event (a fact, `<service>.<entity>.<past tense>`) or a command (a
 * request to the owner, `<service>.<verb>`). DESIGN §2.
 *
 * `event_id` names the cause: the same cause always yields the same id, so a replay is a no-op
 * for every consumer (inbox dedupe on `(event_id, handler)`).
 */
export interface BusMessage<T = Record<string, unknown>> {
  event_id: string;
  /** Routing key: the event or command name. */
  type: string;
  /** Tenant; null only for platform-wide messages. */
  organization_id: string | null;
  /** ISO-8601 UTC instant at which the cause was committed. */
  occurred_at: string;
  /** Ids of the rows it is about and small immutable facts; never a whole row, never a secret. */
  data: T;
}

/**
 * What a producer hands to `tx.publish`; the transaction fills in `occurred_at`. `type` names the
 * message and `data` must be that message's payload (`BusContract`): a mismatch does not compile.
 */
export type OutgoingMessage<K extends BusType = BusType> = {
  [T in K]: { event_id: string; type: T; organization_id: string | null; data: BusPayload<T> };
}[K];
