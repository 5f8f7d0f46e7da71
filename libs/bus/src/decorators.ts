import { SetMetadata } from '@nestjs/common';

export const BUS_HANDLER = Symbol('touchpoint:bus-handler');

/**
 * Marks a method as the handler of one message type (event or command). The method receives
 * `(message: BusMessage<T>, tx: Tx)` and runs inside the transaction that records the message in
 * the inbox, so its writes and the dedupe commit together. Throwing retries the message with
 * backoff, then dead-letters it.
 */
export const OnBusMessage = (type: string): MethodDecorator => SetMetadata(BUS_HANDLER, type);
