/** When an enrollment's next decision check is due (`next_check_at`, seed 003 §4.3, §4.7). */

/** One day, ms. */
export const DAY_MS = 86_400_000;

/**
 * The event lease (seed 003 §4.7): a write that sends `outreach.decision.requested` at once sets
 * `next_check_at` this far ahead, so the due sweep asks again only when the run was lost.
 */
export const EVENT_LEASE_MS = 30 * 60_000;

/** After a refused (`invalid`) or failed (`error`) decision, the next check (seed 003 §4.3). */
export const RETRY_DECISION_AFTER_MS = DAY_MS;

export const addMs = (at: Date, ms: number): Date => new Date(at.getTime() + ms);
