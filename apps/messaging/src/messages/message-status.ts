import type { MessageStatus } from '@touchpoint/contracts';

/** Rank of the forward-only outbound statuses (seed 004 real-time "sent → delivered → read"). */
const RANK: Record<'queued' | 'sent' | 'delivered' | 'read', number> = { queued: 0, sent: 1, delivered: 2, read: 3 };

/** Statuses after which nothing moves a message any more. */
export const TERMINAL_STATUSES: readonly MessageStatus[] = ['failed', 'cancelled'];

/**
 * The status an outbound message moves to when `incoming` is reported while it is `current`, or
 * null when the report must not move it (issue 4 §3): `queued → sent → delivered → read` only
 * forward, so a late `sent` after `read` is ignored; `failed` only before delivery (a message the
 * phone has received cannot fail afterwards); `cancelled` only while still queued; nothing leaves
 * `failed` or `cancelled`. Unknown statuses never move anything.
 */
export function nextStatus(current: MessageStatus, incoming: string): MessageStatus | null {
  if (TERMINAL_STATUSES.includes(current) || current === 'received') return null;
  const from = RANK[current as keyof typeof RANK];
  if (incoming === 'failed') return from <= RANK.sent ? 'failed' : null;
  if (incoming === 'cancelled') return current === 'queued' ? 'cancelled' : null;
  const to = RANK[incoming as keyof typeof RANK];
  if (to === undefined) return null;
  return to > from ? (incoming as MessageStatus) : null;
}
