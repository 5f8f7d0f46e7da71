import { Injectable } from '@nestjs/common';
import type { EffectStatus } from '@touchpoint/contracts';
import { type Queryable, rowsOf } from '@touchpoint/database';

/** An effect as a person's decision or reconciliation reads it (locked). */
export interface LockedEffect {
  id: string;
  enrollment_id: string;
  node_id: string;
  step: number;
  kind: string;
  status: EffectStatus;
}

/** The statements on effects outside the release: a person's decision or reconciliation (seed 002 "Efeitos"); the release's own are in the release repository, a send's reported outcome and delivery in the send reports repository. */
@Injectable()
export class EffectsRepository {
  /** The organization's effect, locked for this transaction (FOR UPDATE: a decision and the release never interleave on it). */
  async lock(db: Queryable, organizationId: string, effectId: string): Promise<LockedEffect | undefined> {
    const [effect] = await rowsOf<LockedEffect>(db, `SELECT id, enrollment_id, node_id, step, kind, status FROM effects WHERE id = $1 AND organization_id = $2 FOR UPDATE`, [effectId, organizationId]);
    return effect;
  }

  /** Records a person's decision on a send awaiting one (`reason` null when approved). */
  async decide(db: Queryable, d: { effectId: string; status: EffectStatus; reason: string | null; now: Date; apiKeyId: string; memberId: string }): Promise<void> {
    await rowsOf(db, `UPDATE effects SET status = $2, reason = $3, decided_at = $4, decided_by_api_key_id = $5, decided_by_member_id = $6, updated_at = $4 WHERE id = $1`, [d.effectId, d.status, d.reason, d.now, d.apiKeyId, d.memberId]);
  }

  /** Records a person's reconciliation of an uncertain send (`resolution` kept as given). */
  async resolve(db: Queryable, effectId: string, outcome: EffectStatus, resolution: Record<string, unknown>, now: Date): Promise<void> {
    await rowsOf(db, `UPDATE effects SET status = $2, resolution = $3::jsonb, reason = coalesce(reason, 'reconciled'), updated_at = $4 WHERE id = $1`, [effectId, outcome, JSON.stringify(resolution), now]);
  }
}
