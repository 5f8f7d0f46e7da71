import type { MessageStatus } from '@touchpoint/contracts';

/**
 * Rank of the forward-only outbound statuses (seed 004 real-time "sent → delivered → read").
 * `ambiguous` ranks with `queued`: nothing is known to have left.
 */
const RANK: Record<'queued' | 'ambiguous' | 'sent' | 'delivered' | 'read', number> = { queued: 0, ambiguous: 0, sent: 1, delivered: 2, read: 3 };

/** Statuses after which nothing moves a message any more. */
export const TERMINAL_STATUSES: readonly MessageStatus[] = ['failed', 'cancelled'];

/**
 * The status an outbound message moves to when `incoming` is reported while it is `current`, or
 * null when the report must not move it: `queued → sent → delivered → read` only
 * forward, so a late `sent` after `read` is ignored; `failed` only before delivery (a message the
 * phone has received cannot fail afterwards); `cancelled` only while still queued; `ambiguous`
 * only from `queued` (the dispatcher parked the send; its resolution then moves it to `sent` or
 * `failed`, and a resolution that arrives before the parking is not undone by it); nothing leaves
 * `failed` or `cancelled`. Unknown statuses never move anything.
 */
export function nextStatus(current: MessageStatus, incoming: string): MessageStatus | null {
  if (TERMINAL_STATUSES.includes(current) || current === 'received') return null;
  const from = RANK[current as keyof typeof RANK];
  if (incoming === 'failed') return from <= RANK.sent ? 'failed' : null;
  if (incoming === 'cancelled') return current === 'queued' ? 'cancelled' : null;
  if (incoming === 'ambiguous') return current === 'queued' ? 'ambiguous' : null;
  const to = RANK[incoming as keyof typeof RANK];
  if (to === undefined) return null;
  return to > from ? (incoming as MessageStatus) : null;
}
