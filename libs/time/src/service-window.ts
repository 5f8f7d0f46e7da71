/**
 * WhatsApp's customer-service window (Cloud API "Customer service windows"; seed 000 "24-hour
 * window", seed 004 notifications): free-form messages reach a person only within 24 hours of
 * their last message to the business; after it Meta refuses them (131047) and only an approved
 * template goes. The one statement of the rule: followups' release and one-off returns and
 * messaging's notifications all call it.
 */
export const WHATSAPP_SERVICE_WINDOW_MS = 24 * 3_600_000;

/**
 * Milliseconds left in the window at `now` for a contact whose last inbound message was at
 * `lastInboundAt` (UTC; null: never wrote). Zero or negative once it is closed (never wrote: -1).
 */
export function serviceWindowLeftMs(lastInboundAt: Date | null | undefined, now: Date): number {
  return lastInboundAt ? lastInboundAt.getTime() + WHATSAPP_SERVICE_WINDOW_MS - now.getTime() : -1;
}

/** True while free text may still go: the window is open at `now` by more than `marginMs` (default 0). */
export function insideServiceWindow(lastInboundAt: Date | null | undefined, now: Date, marginMs = 0): boolean {
  return serviceWindowLeftMs(lastInboundAt, now) > marginMs;
}
