import { cursorAtSql, type Queryable, rowsOf } from '@touchpoint/database';
import { Injectable } from '@nestjs/common';
import type { QueueItemView } from '@touchpoint/contracts';

export interface QueueFilter {
  organizationId: string;
  flowId?: string;
  status?: string;
  contactId?: string;
  q?: string;
}

type QueueRow = {
  id: string;
  contact_id: string;
  contact_name: string | null;
  contact_phone: string | null;
  conversation_id: string | null;
  flow_id: string;
  flow_name: string;
  agent_id: string | null;
  agent_name: string | null;
  status: string;
  node_id: string | null;
  next_run_at: Date | null;
  reason: string | null;
  updated_at: Date;
  created_at: Date;
  last_error: string | null;
  cursor_at: string;
};

/** Where a page of the merged queue starts: after this row in (created_at, kind, id) descending order. */
export interface QueuePosition {
  createdAt: string;
  kind: string;
  id: string;
}

/** Both sides of the follow-up queue (seed 002 "Fila"): enrollments and one-off returns. */
@Injectable()
export class QueueRepository {
  /**
   * Enrollments after `after` in (created_at DESC, id DESC) order. The sort key never changes, so a
   * page boundary is stable even when many rows share a timestamp (one transaction) or change
   * status between pages.
   */
  async enrollmentsPage(db: Queryable, filter: QueueFilter, after: QueuePosition | undefined, limit: number): Promise<(QueueItemView & { cursor_at: string })[]> {
    const where = ['e.organization_id = $1'];
    const params: unknown[] = [filter.organizationId];
    if (filter.flowId) where.push(`e.flow_id = $${params.push(filter.flowId)}`);
    if (filter.status) where.push(`e.status = $${params.push(filter.status)}`);
    if (filter.contactId) where.push(`e.contact_id = $${params.push(filter.contactId)}`);
    if (filter.q) {
      const like = `%${filter.q.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
      const p = params.push(like);
      where.push(`(c.name ILIKE $${p} OR c.phone ILIKE $${p} OR f.name ILIKE $${p})`);
    }
    if (after) where.push(`(e.created_at, 'enrollment'::text, e.id) < ($${params.push(after.createdAt)}::timestamptz, $${params.push(after.kind)}::text, $${params.push(after.id)}::uuid)`);
    params.push(limit);
    const rows = await rowsOf<QueueRow>(
      db,
      `SELECT e.id, e.contact_id, c.name AS contact_name, c.phone AS contact_phone, e.conversation_id, e.flow_id, f.name AS flow_name,
              e.agent_id, ag.name AS agent_name, e.status, e.node_id, e.next_run_at, e.reason, e.updated_at, e.created_at, e.last_error,
              ${cursorAtSql('e.created_at')} AS cursor_at
         FROM enrollments e
         JOIN flows f ON f.id = e.flow_id
         LEFT JOIN contacts c ON c.organization_id = e.organization_id AND c.contact_id = e.contact_id
         LEFT JOIN agents ag ON ag.organization_id = e.organization_id AND ag.id = e.agent_id
        WHERE ${where.join(' AND ')}
        ORDER BY e.created_at DESC, e.id DESC
        LIMIT $${params.length}`,
      params,
    );
    return rows.map((r) => ({
      kind: 'enrollment' as const,
      id: r.id,
      contact_id: r.contact_id,
      contact_name: r.contact_name,
      contact_phone: r.contact_phone,
      conversation_id: r.conversation_id,
      flow_id: r.flow_id,
      flow_name: r.flow_name,
      agent_id: r.agent_id,
      agent_name: r.agent_name,
      status: r.status,
      node_id: r.node_id,
      next_fire_at: r.next_run_at ? r.next_run_at.toISOString() : null,
      reason: r.reason,
      updated_at: r.updated_at.toISOString(),
      created_at: r.created_at.toISOString(),
      last_error: r.last_error,
      cursor_at: r.cursor_at,
    }));
  }

  /** One-off returns after `after` in the same (created_at, kind, id) descending order; they have no flow or node. */
  async promisesPage(db: Queryable, filter: QueueFilter, after: QueuePosition | undefined, limit: number): Promise<(QueueItemView & { cursor_at: string })[]> {
    const where = ['p.organization_id = $1'];
    const params: unknown[] = [filter.organizationId];
    if (filter.status) where.push(`p.status = $${params.push(filter.status)}`);
    if (filter.contactId) where.push(`p.contact_id = $${params.push(filter.contactId)}`);
    if (filter.q) {
      const p = params.push(`%${filter.q.replace(/[\\%_]/g, (c) => `\\${c}`)}%`);
      where.push(`(c.name ILIKE $${p} OR c.phone ILIKE $${p} OR p.reason ILIKE $${p})`);
    }
    if (after) where.push(`(p.created_at, 'promise'::text, p.id) < ($${params.push(after.createdAt)}::timestamptz, $${params.push(after.kind)}::text, $${params.push(after.id)}::uuid)`);
    params.push(limit);
    const rows = await rowsOf<{
      id: string;
      contact_id: string;
      contact_name: string | null;
      contact_phone: string | null;
      conversation_id: string | null;
      agent_id: string | null;
      agent_name: string | null;
      status: string;
      due_at: Date;
      reason: string;
      updated_at: Date;
      created_at: Date;
      last_error: string | null;
      cursor_at: string;
    }>(
      db,
      `SELECT p.id, p.contact_id, c.name AS contact_name, c.phone AS contact_phone, p.conversation_id, p.agent_id, ag.name AS agent_name, p.status, p.due_at, p.reason,
              p.updated_at, p.created_at, p.last_error,
              ${cursorAtSql('p.created_at')} AS cursor_at
         FROM promises p
         LEFT JOIN contacts c ON c.organization_id = p.organization_id AND c.contact_id = p.contact_id
         LEFT JOIN agents ag ON ag.organization_id = p.organization_id AND ag.id = p.agent_id
        WHERE ${where.join(' AND ')}
        ORDER BY p.created_at DESC, p.id DESC
        LIMIT $${params.length}`,
      params,
    );
    return rows.map((r) => ({
      kind: 'promise' as const,
      id: r.id,
      contact_id: r.contact_id,
      contact_name: r.contact_name,
      contact_phone: r.contact_phone,
      conversation_id: r.conversation_id,
      flow_id: null,
      flow_name: null,
      agent_id: r.agent_id,
      agent_name: r.agent_name,
      status: r.status,
      node_id: null,
      // Only a return still waiting for its time has one.
      next_fire_at: r.status === 'scheduled' || r.status === 'template_pending' ? r.due_at.toISOString() : null,
      reason: r.reason,
      updated_at: r.updated_at.toISOString(),
      created_at: r.created_at.toISOString(),
      last_error: r.last_error,
      cursor_at: r.cursor_at,
    }));
  }
}
