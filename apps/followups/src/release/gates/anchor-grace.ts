/**
 * The anchor gate of a send step (seed 000 "Release", timing: "reminder past grace → skip"). A
 * send whose action sets `anchor_grace_ms` is tied to the enrollment's anchor (`anchor_at`, an
 * appointment's start): a reminder for an appointment that is long over must not go out, even when
 * the step was late (deferred to the send window, a busy number, a backlog).
 */

/** Why an anchored send is skipped: the anchor is past its grace, or the enrollment has none. */
export type AnchorSkipReason = 'anchor_past_grace' | 'anchor_missing';

/**
 * Whether an anchored send must be skipped now. Checked on every release of the step, so a step
 * deferred past the grace is skipped when it next comes due.
 * @param graceMs the action's `anchor_grace_ms` (ms); undefined: the step is not tied to the anchor
 * @param anchorAt the enrollment's `anchor_at` (an instant), or null
 * @param now the release's clock (UTC instant)
 * @returns the skip reason, or undefined when the send may go on
 */
export function anchorSkipReason(graceMs: number | undefined, anchorAt: Date | null, now: Date): AnchorSkipReason | undefined {
  if (graceMs === undefined) return undefined;
  if (!anchorAt) return 'anchor_missing';
  // Strictly later than anchor + grace: at exactly the grace the reminder may still go.
  return now.getTime() > anchorAt.getTime() + graceMs ? 'anchor_past_grace' : undefined;
}
