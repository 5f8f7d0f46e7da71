import { cursorAtSql, type Queryable, rowsOf } from '@touchpoint/database';
import { Injectable } from '@nestjs/common';
import type { PromiseStatus } from '@touchpoint/contracts';
import type { PromiseRow } from './promise-row.js';

export interface PromiseFilter {
  organizationId: string;
  status?: string;
  contactId?: string;
  q?: string;
}

/** Every SQL statement of one-off returns. */
@Injectable()
export class PromisesRepository {
  async insert(db: Queryable, row: Omit<PromiseRow, 'locked_until' | 'attempts' | 'run' | 'alert' | 'resolution' | 'last_error' | 'cancel_reason' | 'fired_at' | 'updated_at'>): Promise<PromiseRow> {
    const [inserted] = await rowsOf<PromiseRow>(
      db,
      `INSERT INTO promises (id, organization_id, contact_id, conversation_id, agent_id, operation_key, reason, promise, promised_at, due_at, outside_window, template, status, created_at, updated_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12::jsonb, $13, $14, $14) RETURNING *`,
      [row.id, row.organization_id, row.contact_id, row.conversation_id, row.agent_id, row.operation_key, row.reason, row.promise, row.promised_at, row.due_at, row.outside_window, row.template ? JSON.stringify(row.template) : null, row.status, row.created_at],
    );
    return inserted!;
  }

  async find(db: Queryable, organizationId: string, id: string, lock = false): Promise<PromiseRow | undefined> {
    const [row] = await rowsOf<PromiseRow>(db, `SELECT * FROM promises WHERE id = $1 AND organization_id = $2${lock ? ' FOR UPDATE' : ''}`, [id, organizationId]);
    return row;
  }

  async findByOperationKey(db: Queryable, organizationId: string, key: string): Promise<PromiseRow | undefined> {
    const [row] = await rowsOf<PromiseRow>(db, `SELECT * FROM promises WHERE organization_id = $1 AND operation_key = $2`, [organizationId, key]);
    return row;
  }

  /** Newest first after `after` in (created_at, id) order, with the microsecond cursor key. */
  async page(db: Queryable, filter: PromiseFilter, after: { createdAt: string; id: string } | undefined, limit: number): Promise<(PromiseRow & { cursor_at: string; contact_name: string | null; contact_phone: string | null })[]> {
    const where = ['p.organization_id = $1'];
    const params: unknown[] = [filter.organizationId];
    if (filter.status) where.push(`p.status = $${params.push(filter.status)}`);
    if (filter.contactId) where.push(`p.contact_id = $${params.push(filter.contactId)}`);
    if (filter.q) {
      const p = params.push(`%${filter.q.replace(/[\\%_]/g, (c) => `\\${c}`)}%`);
      where.push(`(c.name ILIKE $${p} OR c.phone ILIKE $${p} OR p.reason ILIKE $${p} OR p.promise ILIKE $${p})`);
    }
    if (after) where.push(`(p.created_at, p.id) < ($${params.push(after.createdAt)}::timestamptz, $${params.push(after.id)}::uuid)`);
    params.push(limit);
    return rowsOf(
      db,
      `SELECT p.*, c.name AS contact_name, c.phone AS contact_phone,
              ${cursorAtSql('p.created_at')} AS cursor_at
         FROM promises p
         LEFT JOIN contacts c ON c.organization_id = p.organization_id AND c.contact_id = p.contact_id
        WHERE ${where.join(' AND ')}
        ORDER BY p.created_at DESC, p.id DESC
        LIMIT $${params.length}`,
      params,
    );
  }

  /**
   * The oldest return due now, locked without waiting: a scheduled one (or a template waiting for a
   * number) whose time has come, or a resumption whose lease ran out (its worker died).
   */
  async claimDue(db: Queryable, now: Date): Promise<PromiseRow | undefined> {
    const [row] = await rowsOf<PromiseRow>(
      db,
      `SELECT * FROM promises
        WHERE (status IN ('scheduled', 'template_pending') AND due_at <= $1) OR (status = 'turn_enqueued' AND locked_until <= $1)
        ORDER BY due_at
        LIMIT 1
        FOR UPDATE SKIP LOCKED`,
      [now],
    );
    return row;
  }

  /** Moves a return on. `fence`: only while its attempts are still that number (a late answer changes nothing). */
  async update(
    db: Queryable,
    id: string,
    change: Partial<Pick<PromiseRow, 'status' | 'due_at' | 'locked_until' | 'run' | 'alert' | 'resolution' | 'last_error' | 'cancel_reason' | 'fired_at'>> & { attempts?: number },
    now: Date,
    fence?: { attempts: number; status: PromiseStatus },
  ): Promise<PromiseRow | undefined> {
    const params: unknown[] = [id, now];
    const set = Object.entries(change).map(([k, v]) => {
      const json = k === 'run' || k === 'alert' || k === 'resolution';
      return `${k} = $${params.push(json && v !== null ? JSON.stringify(v) : v)}${json ? '::jsonb' : ''}`;
    });
    let where = 'id = $1';
    if (fence) where += ` AND attempts = $${params.push(fence.attempts)} AND status = $${params.push(fence.status)}`;
    const [row] = await rowsOf<PromiseRow>(db, `UPDATE promises SET ${[...set, 'updated_at = $2'].join(', ')} WHERE ${where} RETURNING *`, params);
    return row;
  }

  /**
   * A stop path (seed 000 "Stop hooks": lead closed, opt-out, erasure): cancels the contact's
   * returns that have not fired, with `reason`. A resumption waiting on its model call is
   * cancelled too: its fenced second pass then drops the answer. A template already handed to
   * messaging (`template_dispatching`) is left to its send outcome.
   * @returns the returns it cancelled
   */
  async cancelPendingOfContact(db: Queryable, organizationId: string, contactId: string, reason: string, now: Date): Promise<PromiseRow[]> {
    return rowsOf<PromiseRow>(
      db,
      `UPDATE promises SET status = 'cancelled', cancel_reason = $3, locked_until = NULL, updated_at = $4
        WHERE organization_id = $1 AND contact_id = $2 AND status IN ('scheduled', 'template_pending', 'turn_enqueued')
        RETURNING *`,
      [organizationId, contactId, reason, now],
    );
  }

  /** Sets the status of the return whose send has this key, if it is in one of `from`. */
  async settleSend(db: Queryable, organizationId: string, id: string, status: PromiseStatus, from: PromiseStatus[], lastError: string | null, now: Date): Promise<PromiseRow | undefined> {
    const [row] = await rowsOf<PromiseRow>(db, `UPDATE promises SET status = $3, last_error = coalesce($5, last_error), updated_at = $6 WHERE id = $1 AND organization_id = $2 AND status = ANY($4::text[]) RETURNING *`, [id, organizationId, status, from, lastError, now]);
    return row;
  }
}
