import type { AbuseActionType } from '@touchpoint/contracts';

/** Offenses counted for the ladder are those of the last 30 days (seed 004 "Progressive Penalties"), ms. */
export const OFFENSE_WINDOW_MS = 30 * 24 * 3600_000;

/** A rung of the ladder: what an offense costs. `durationMs` 0 restricts nothing (a warning). */
export interface Penalty {
  type: AbuseActionType;
  durationMs: number;
}

/**
 * Seed 004 "Progressive Penalties", by the offense's number in the last 30 days: 1st a warning,
 * 2nd a 15-minute throttle, 3rd 1 hour, 4th 24 hours, 5th and later a 7-day block.
 */
export const PENALTY_LADDER: readonly Penalty[] = [
  { type: 'warning', durationMs: 0 },
  { type: 'throttle', durationMs: 15 * 60_000 },
  { type: 'throttle', durationMs: 3600_000 },
  { type: 'throttle', durationMs: 24 * 3600_000 },
  { type: 'block', durationMs: 7 * 24 * 3600_000 },
];

/** The penalty for the `offenseNumber`-th offense (1-based); beyond the ladder, its last rung. */
export function penaltyFor(offenseNumber: number): Penalty {
  const index = Math.min(Math.max(offenseNumber, 1), PENALTY_LADDER.length) - 1;
  return PENALTY_LADDER[index];
}
