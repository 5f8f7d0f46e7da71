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

/** The statements on effects outside the release: a person's decision or reconciliation (seed 002 "Efeitos") and the reported outcome of a send; the release's own are in the release repository. */
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

  /**
   * Moves a send effect to its reported outcome, only from one of `from` (a late or repeated report
   * finds nothing); the message id and the error fill in, never clear. Undefined when nothing moved.
   */
  async recordSendOutcome(db: Queryable, o: { organizationId: string; idempotencyKey: string; outcome: EffectStatus; from: string[]; messageId: string | null; errorCode: string | null; at: Date }): Promise<{ id: string; enrollment_id: string; node_id: string } | undefined> {
    const [effect] = await rowsOf<{ id: string; enrollment_id: string; node_id: string }>(
      db,
      `UPDATE effects SET status = $3, message_id = coalesce($4::uuid, message_id), reason = coalesce($5, reason), updated_at = $6
        WHERE idempotency_key = $1 AND organization_id = $2 AND kind = 'send' AND status = ANY($7::text[])
        RETURNING id, enrollment_id, node_id`,
      [o.idempotencyKey, o.organizationId, o.outcome, o.messageId, o.errorCode, o.at, o.from],
    );
    return effect;
  }

  /** Names the message of a send effect that has none yet. */
  async fillMessageId(db: Queryable, organizationId: string, idempotencyKey: string, messageId: string): Promise<void> {
    await rowsOf(db, `UPDATE effects SET message_id = $3 WHERE idempotency_key = $1 AND organization_id = $2 AND message_id IS NULL`, [idempotencyKey, organizationId, messageId]);
  }
}
