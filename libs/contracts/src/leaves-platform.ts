import { MessagingEvents } from './messaging.js';
import { PlatformEvents } from './platform.js';

/**
 * Message types declared here that no service consumes on the bus, on purpose: they leave the
 * platform (to API clients) or never enter it. Type → the one-line reason. Every other event,
 * command and wake-up must have a handler in `apps/` (DESIGN §2; test/safety/contracts.spec.ts
 * fails on a new orphan): an event nobody consumes is how a STOP once failed to suppress anything.
 */
export const LEAVES_PLATFORM: Readonly<Record<string, string>> = {
  [MessagingEvents.MessageQueued]: 'feed only: written to the messaging stream, read by clients on GET /events/stream',
  [MessagingEvents.MessageStatusChanged]: 'feed only: written to the messaging stream, read by clients on GET /events/stream',
  [MessagingEvents.InstanceOpened]: 'feed only: written to the messaging stream, read by clients on GET /events/stream',
  [MessagingEvents.InstanceClosed]: 'feed only: written to the messaging stream, read by clients on GET /events/stream',
  [MessagingEvents.InstanceSummarized]: 'feed only: written to the messaging stream, read by clients on GET /events/stream',
  [MessagingEvents.NotificationCreated]: 'for clients: the same fact is on GET /events/stream; no service acts on a notification being created',
  [MessagingEvents.NotificationDeliveryUpdated]: 'for clients: the same fact is on GET /events/stream; no service acts on a delivery outcome',
  [PlatformEvents.ProbeRecorded]: 'bus self-test: published and handled only by the bus tests and bench:bus, never by a service',
};
