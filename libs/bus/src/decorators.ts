import { SetMetadata } from '@nestjs/common';
import type { BusMessage, BusPayload, BusType } from '@touchpoint/contracts';
import type { Tx } from '@touchpoint/database';

export const BUS_HANDLER = Symbol('touchpoint:bus-handler');
export const BUS_BATCH_PREPARER = Symbol('touchpoint:bus-batch-preparer');

/** A handler of the message named `K`: it receives that message's payload type (`BusContract`). */
export type BusHandlerOf<K extends BusType> = (message: BusMessage<BusPayload<K>>, tx: Tx) => Promise<void>;

/**
 * Marks a method as the handler of one message type (event or command). The method receives
 * `(message: BusMessage<T>, tx: Tx)` and runs inside the transaction that records the message in
 * the inbox, so its writes and the dedupe commit together. Throwing retries the message with
 * backoff, then dead-letters it.
 *
 * For a message of `BusContract`, the method must accept that message's payload (a method taking
 * another payload does not compile). Any other name is a service's private wake-up to itself,
 * whose handler reads no message: `() => Promise<void>`.
 */
export function OnBusMessage<K extends BusType>(type: K): (target: object, key: string | symbol, descriptor: { value?: BusHandlerOf<K> }) => void;
export function OnBusMessage(type: string): (target: object, key: string | symbol, descriptor: { value?: () => Promise<void> }) => void;
export function OnBusMessage(type: string): MethodDecorator {
  return SetMetadata(BUS_HANDLER, type);
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
