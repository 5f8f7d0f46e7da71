import { applyDecorators, SetMetadata } from '@nestjs/common';
import type { BusMessage, BusPayload, BusType } from '@touchpoint/contracts';
import type { Tx } from '@touchpoint/database';

export const BUS_HANDLER = Symbol('touchpoint:bus-handler');
/** The `when` of `OnBusMessage`, on the handler method (absent: the handler takes every message). */
export const BUS_HANDLER_FILTER = Symbol('touchpoint:bus-handler-filter');
export const BUS_BATCH_PREPARER = Symbol('touchpoint:bus-batch-preparer');

/** A handler of the message named `K`: it receives that message's payload type (`BusContract`). */
export type BusHandlerOf<K extends BusType> = (message: BusMessage<BusPayload<K>>, tx: Tx) => Promise<void>;

/**
 * Which messages of its type a handler wants. Evaluated before any transaction, on the message as
 * it came off the wire; it cannot see the handler's instance (`this`). A filter that throws (a
 * payload without the field it reads) counts as accepting: the handler then runs and fails, or
 * not, as it would have without the filter.
 */
export type BusMessageFilter<T = unknown> = (message: BusMessage<T>) => boolean;

/** Options of `OnBusMessage`. */
export interface OnBusMessageOptions<T = unknown> {
  /**
   * Only messages for which this answers true reach the handler. A message it rejects gets no
   * inbox row and no transaction for this handler (`touchpoint_bus_consumed_total{outcome="skipped"}`);
   * one that no handler of the service accepts is acked at once. For a handler whose first line
   * returns on a field check: write the check once, as a type guard, and use it both here and as
   * that first line (where it narrows the payload's types).
   */
  when?: BusMessageFilter<T>;
}

/**
 * Marks a method as the handler of one message type (event or command). The method receives
 * `(message: BusMessage<T>, tx: Tx)` and runs inside the transaction that records the message in
 * the inbox, so its writes and the dedupe commit together. Throwing retries the message with
 * backoff, then dead-letters it. `options.when` narrows the messages it takes (`OnBusMessageOptions`).
 *
 * For a message of `BusContract`, the method must accept that message's payload (a method taking
 * another payload does not compile). Any other name is a service's private wake-up to itself,
 * whose handler reads no message: `() => Promise<void>`.
 */
export function OnBusMessage<K extends BusType>(type: K, options?: OnBusMessageOptions<BusPayload<K>>): (target: object, key: string | symbol, descriptor: { value?: BusHandlerOf<K> }) => void;
export function OnBusMessage(type: string, options?: OnBusMessageOptions): (target: object, key: string | symbol, descriptor: { value?: () => Promise<void> }) => void;
export function OnBusMessage(type: string, options: OnBusMessageOptions = {}): MethodDecorator {
  const { when } = options;
  return when ? applyDecorators(SetMetadata(BUS_HANDLER, type), SetMetadata(BUS_HANDLER_FILTER, when)) : SetMetadata(BUS_HANDLER, type);
}

/**
 * Marks a method that runs first in a consumer batch of one of `types` (several messages of one
 * type sharing a transaction; see `BusConnection`), with all of the batch's messages:
 * `(messages: BusMessage[], tx: Tx) => Promise<void>`. For taking the rows the handlers will lock
 * in one order up front, so that two batches never deadlock. Not called for a message that runs
 * alone. Throwing rolls the batch back and its messages run one by one.
 */
export function BeforeBusBatch(...types: string[]): MethodDecorator {
  return SetMetadata(BUS_BATCH_PREPARER, types);
}
