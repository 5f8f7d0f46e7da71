import { Injectable } from '@nestjs/common';
import type { TurnPromiseView } from '@touchpoint/contracts';
import { cursorAtSql, type CursorPosition, type Queryable, rowsOf } from '@touchpoint/database';

/** An agent with its current version's follow-up settings. */
export interface AgentRow {
  id: string;
  organization_id: string;
  name: string;
  version: number;
  followup_enabled: boolean;
  flow_ids: string[];
  created_at: Date;
  updated_at: Date;
}

export interface AgentVersionRow {
  agent_id: string;
  version: number;
  followup_enabled: boolean;
  flow_ids: string[];
  created_at: Date;
}

/** A row of `turn_promises` with its agent's name; the columns its view shows as they are come from `TurnPromiseView`. */
export interface TurnPromiseRow extends Pick<TurnPromiseView, 'id' | 'agent_id' | 'agent_name' | 'turn_id' | 'position' | 'contact_id' | 'conversation_id' | 'text'> {
  organization_id: string;
  due_at: Date | null;
  created_at: Date;
  cursor_at: string;
}

const AGENT_SELECT = `SELECT a.id, a.organization_id, a.name, a.version, v.followup_enabled, v.flow_ids, a.created_at, a.updated_at
                        FROM agents a JOIN agent_versions v ON v.agent_id = a.id AND v.version = a.version`;

/** Every SQL statement of the agents registry and turn promises. */
@Injectable()
export class AgentsRepository {
  async insertAgent(db: Queryable, row: { id: string; organization_id: string; name: string; now: Date }): Promise<void> {
    await rowsOf(db, `INSERT INTO agents (id, organization_id, name, version, created_at, updated_at) VALUES ($1, $2, $3, 1, $4, $4)`, [row.id, row.organization_id, row.name, row.now]);
  }

  async insertVersion(db: Queryable, row: { agent_id: string; version: number; followup_enabled: boolean; flow_ids: string[]; now: Date }): Promise<void> {
    await rowsOf(db, `INSERT INTO agent_versions (agent_id, version, followup_enabled, flow_ids, created_at) VALUES ($1, $2, $3, $4::uuid[], $5)`, [row.agent_id, row.version, row.followup_enabled, row.flow_ids, row.now]);
  }

  /** Moves the agent to `version` (and `name`). */
  async setCurrent(db: Queryable, agentId: string, version: number, name: string, now: Date): Promise<void> {
    await rowsOf(db, `UPDATE agents SET version = $2, name = $3, updated_at = $4 WHERE id = $1`, [agentId, version, name, now]);
  }

  /**
   * The agent with its current version. `lock` takes the agent row, so two new versions of one
   * agent are numbered one after the other.
   */
  async find(db: Queryable, organizationId: string, agentId: string, lock = false): Promise<AgentRow | undefined> {
    const rows = await rowsOf<AgentRow>(db, `${AGENT_SELECT} WHERE a.organization_id = $1 AND a.id = $2 ${lock ? 'FOR UPDATE OF a' : ''}`, [organizationId, agentId]);
    return rows[0];
  }

  async list(db: Queryable, organizationId: string): Promise<AgentRow[]> {
    return rowsOf<AgentRow>(db, `${AGENT_SELECT} WHERE a.organization_id = $1 ORDER BY a.created_at DESC, a.id DESC`, [organizationId]);
  }

  async versions(db: Queryable, agentId: string): Promise<AgentVersionRow[]> {
    return rowsOf<AgentVersionRow>(db, `SELECT * FROM agent_versions WHERE agent_id = $1 ORDER BY version DESC`, [agentId]);
  }

  /** Inserts a turn's promises; those the turn already has (same position) are kept as they were. */
  async insertPromises(db: Queryable, rows: Omit<TurnPromiseRow, 'agent_name' | 'cursor_at'>[]): Promise<number> {
    let inserted = 0;
    for (const r of rows) {
      const done = await rowsOf(
        db,
        `INSERT INTO turn_promises (id, organization_id, agent_id, turn_id, position, contact_id, conversation_id, text, due_at, created_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
         ON CONFLICT ON CONSTRAINT turn_promises_turn_position DO NOTHING
         RETURNING id`,
        [r.id, r.organization_id, r.agent_id, r.turn_id, r.position, r.contact_id, r.conversation_id, r.text, r.due_at, r.created_at],
      );
      inserted += done.length;
    }
    return inserted;
  }

  /** Erasure (seed 000 "Stop hooks"): the texts an agent promised a contact are personal data; they go. */
  async deleteContactPromises(db: Queryable, organizationId: string, contactId: string): Promise<void> {
    await rowsOf(db, `DELETE FROM turn_promises WHERE organization_id = $1 AND contact_id = $2`, [organizationId, contactId]);
  }

  /** Turn promises, newest first, after `after` in (created_at, id) order. */
  async promisesPage(db: Queryable, filter: { organizationId: string; agentId?: string; contactId?: string; turnId?: string }, after: CursorPosition | undefined, limit: number): Promise<TurnPromiseRow[]> {
    const where = ['p.organization_id = $1'];
    const params: unknown[] = [filter.organizationId];
    if (filter.agentId) where.push(`p.agent_id = $${params.push(filter.agentId)}`);
    if (filter.contactId) where.push(`p.contact_id = $${params.push(filter.contactId)}`);
    if (filter.turnId) where.push(`p.turn_id = $${params.push(filter.turnId)}`);
    // Promises of one turn share created_at: the id breaks the tie, so a page boundary is exact.
    if (after) where.push(`(p.created_at, p.id) < ($${params.push(after.createdAt)}::timestamptz, $${params.push(after.id)}::uuid)`);
    params.push(limit);
    return rowsOf<TurnPromiseRow>(
      db,
      `SELECT p.*, a.name AS agent_name, ${cursorAtSql('p.created_at')} AS cursor_at
         FROM turn_promises p JOIN agents a ON a.id = p.agent_id
        WHERE ${where.join(' AND ')}
        ORDER BY p.created_at DESC, p.id DESC
        LIMIT $${params.length}`,
      params,
    );
  }

  /** One turn's promises, in their order. */
  async turn(db: Queryable, agentId: string, turnId: string): Promise<TurnPromiseRow[]> {
    return rowsOf<TurnPromiseRow>(db, `SELECT p.*, a.name AS agent_name, ${cursorAtSql('p.created_at')} AS cursor_at FROM turn_promises p JOIN agents a ON a.id = p.agent_id WHERE p.agent_id = $1 AND p.turn_id = $2 ORDER BY p.position`, [agentId, turnId]);
  }
}
