import { Injectable } from '@nestjs/common';
import type { EffectListStatus, EffectStatus } from '@touchpoint/contracts';
import { cursorAtSql, type Queryable, rowsOf } from '@touchpoint/database';
import type { EffectRow } from '../enrollments/enrollment-row.js';

/** An effect as a person's decision or reconciliation reads it (locked). */
export interface LockedEffect {
  id: string;
  enrollment_id: string;
  node_id: string;
  step: number;
  kind: string;
  status: EffectStatus;
}

/** An effect of a listed page, with its enrollment's flow and contact, and its position for the cursor. */
export type ListedEffectRow = EffectRow & { flow_id: string; flow_name: string; version_id: string; contact_name: string | null; contact_phone: string | null; cursor_at: string };

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

  /**
   * The organization's effects of `status`, oldest first (the one waiting longest for a person on
   * top), strictly after `after` in (created_at, id) order: a boundary shared by rows of one
   * timestamp neither repeats nor skips one, and a row decided between two pages only leaves the
   * list. `effects_awaiting_idx` (organization_id, created_at) serves `awaiting_decision`.
   */
  async page(db: Queryable, filter: { organizationId: string; status: EffectListStatus; flowId?: string }, after: { createdAt: string; id: string } | undefined, limit: number): Promise<ListedEffectRow[]> {
    const where = ['x.organization_id = $1', 'x.status = $2'];
    const params: unknown[] = [filter.organizationId, filter.status];
    if (filter.flowId) where.push(`e.flow_id = $${params.push(filter.flowId)}`);
    if (after) where.push(`(x.created_at, x.id) > ($${params.push(after.createdAt)}::timestamptz, $${params.push(after.id)}::uuid)`);
    params.push(limit);
    return rowsOf<ListedEffectRow>(
      db,
      `SELECT x.*, e.flow_id, f.name AS flow_name, e.version_id, c.name AS contact_name, c.phone AS contact_phone, ${cursorAtSql('x.created_at')} AS cursor_at
         FROM effects x
         JOIN enrollments e ON e.id = x.enrollment_id
         JOIN flows f ON f.id = e.flow_id
         LEFT JOIN contacts c ON c.organization_id = x.organization_id AND c.contact_id = x.contact_id
        WHERE ${where.join(' AND ')}
        ORDER BY x.created_at, x.id
        LIMIT $${params.length}`,
      params,
    );
  }
}
