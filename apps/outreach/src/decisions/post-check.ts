import type { OutreachActionType } from '@touchpoint/contracts';
import { truncateText } from '@touchpoint/text';

/** Longest rationale kept, characters (seed 003 §4.3). */
export const RATIONALE_MAX = 1000;
/** Longest gap a wait may ask for, days (seed 003 §4.3: wait is clamped to [followup_min_days, 30]). */
export const WAIT_MAX_DAYS = 30;

const OUTBOUND: OutreachActionType[] = ['email', 'linkedin_connection', 'linkedin_message'];

/** A NextAction that passed the post-check, with its gap decided by policy. */
export interface CheckedAction {
  type: OutreachActionType;
  rationale: string;
  objective: string | null;
  goal_met: boolean;
  /** Days to the next check: set for email, linkedin_* and wait; null for stop. */
  followup_days: number | null;
}

export type PostCheckResult = { ok: true; action: CheckedAction } | { ok: false; reason: string };

/**
 * The post-check of a NextAction (seed 003 §4.3): code has the last word over the model.
 * - type: trimmed, lower-cased, `-` and spaces to `_`, then it must be in `allowedActions`;
 * - rationale required (cut at 1000 characters); objective required for email and linkedin_*;
 *   a missing goal_met is false;
 * - days: rounded; missing or not a number means followup_min_days; email and linkedin_* are
 *   clamped to [followup_min_days, followup_max_days], wait to [followup_min_days, 30].
 * A refusal names its reason (saved as the decision's failure_reason).
 */
export function postCheck(output: unknown, allowedActions: readonly string[], cadence: { followup_min_days: number; followup_max_days: number }): PostCheckResult {
  if (!output || typeof output !== 'object' || Array.isArray(output)) return { ok: false, reason: 'output_not_an_object' };
  const o = output as Record<string, unknown>;
  if (typeof o.type !== 'string') return { ok: false, reason: 'type_missing' };
  const type = o.type
    .trim()
    .toLowerCase()
    .replace(/[-\s]+/g, '_');
  if (!allowedActions.includes(type)) return { ok: false, reason: 'type_not_allowed' };
  const rationale = typeof o.rationale === 'string' ? o.rationale.trim() : '';
  if (!rationale) return { ok: false, reason: 'rationale_missing' };
  const objective = typeof o.objective === 'string' && o.objective.trim() ? o.objective.trim() : null;
  const outbound = OUTBOUND.includes(type as OutreachActionType);
  if (outbound && !objective) return { ok: false, reason: 'objective_missing' };

  let followupDays: number | null = null;
  if (type !== 'stop') {
    const raw = typeof o.suggested_followup_days === 'number' ? o.suggested_followup_days : typeof o.suggested_followup_days === 'string' ? Number(o.suggested_followup_days.trim() || Number.NaN) : Number.NaN;
    const days = Number.isFinite(raw) ? Math.round(raw) : cadence.followup_min_days;
    const max = outbound ? cadence.followup_max_days : Math.max(WAIT_MAX_DAYS, cadence.followup_min_days);
    followupDays = Math.min(Math.max(days, cadence.followup_min_days), max);
  }
  return {
    ok: true,
    action: { type: type as OutreachActionType, rationale: truncateText(rationale, RATIONALE_MAX), objective, goal_met: o.goal_met === true, followup_days: followupDays },
  };
}
