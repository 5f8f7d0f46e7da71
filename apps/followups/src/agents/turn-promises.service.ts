import { Injectable } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import { type CursorPage, TURN_MAX_PROMISES, TURN_PROMISE_LIST_DEFAULT_LIMIT, TURN_PROMISE_LIST_MAX_LIMIT, TURN_PROMISE_TEXT_MAX, type TurnPromiseListData, type TurnPromisesRecordData, type TurnPromiseView } from '@touchpoint/contracts';
import { decodeCursor, encodeCursor, notFound, poolOf } from '@touchpoint/database';
import { codePointLength } from '@touchpoint/text';
import { UnitOfWork } from '@touchpoint/runtime';
import { Clock } from '@touchpoint/time';
import { check } from '../input-checks/input-checks.js';
import { ContactsRepository } from '../contacts/contacts.repository.js';
import { AgentsRepository, type TurnPromiseRow } from './agents.repository.js';

/** Longest turn id, code points. */
export const TURN_ID_MAX = 200;

function promisesProblems(promises: unknown): string[] {
  if (!Array.isArray(promises) || promises.length < 1 || promises.length > TURN_MAX_PROMISES) return [`promises must list 1 to ${TURN_MAX_PROMISES} promises`];
  const problems: string[] = [];
  promises.forEach((p: { text?: unknown; due_at?: unknown }, i) => {
    if (typeof p?.text !== 'string' || p.text.trim() === '' || codePointLength(p.text) > TURN_PROMISE_TEXT_MAX) problems.push(`promises.${i}.text must be 1 to ${TURN_PROMISE_TEXT_MAX} characters`);
    if (p?.due_at !== undefined && p.due_at !== null && (typeof p.due_at !== 'string' || Number.isNaN(Date.parse(p.due_at)))) problems.push(`promises.${i}.due_at must be an ISO-8601 instant`);
  });
  return problems;
}

export function toTurnPromiseView(r: TurnPromiseRow): TurnPromiseView {
  return {
    id: r.id,
    customer_id: r.organization_id,
    agent_id: r.agent_id,
    agent_name: r.agent_name,
    turn_id: r.turn_id,
    position: r.position,
    contact_id: r.contact_id,
    conversation_id: r.conversation_id,
    text: r.text,
    due_at: r.due_at ? r.due_at.toISOString() : null,
    created_at: r.created_at.toISOString(),
  };
}

/**
 * Turn promises (seed 002: `GET /ai/promises`, the read-only record of what an agent said it would
 * do in a turn, shown in the follow-up views). The agent runtime records a turn's promises once;
 * nothing here schedules anything — a one-off return is its own object (`/ai/followups/promises`).
 */
@Injectable()
export class TurnPromisesService {
  constructor(
    private readonly uow: UnitOfWork,
    private readonly agents: AgentsRepository,
    private readonly contacts: ContactsRepository,
    private readonly clock: Clock,
  ) {}

  /**
   * Records a turn's promises. The same `turn_id` of the same agent returns what was recorded for
   * it first (`created: false`), whatever this call carries: the turn is decided by its first
   * position's row, inserted first in the transaction — a concurrent first record waits on that
   * row and then finds the turn, so one turn is kept whole and never appended to.
   * @throws AppError validation_failed, not_found (agent; the contact when it was erased, as
   *   messaging's notifications answer, seed 000 "Stop hooks": erasure)
   */
  async record(input: TurnPromisesRecordData): Promise<{ promises: TurnPromiseView[]; created: boolean }> {
    check(input).uuid('organization_id').uuid('agent_id').uuid('contact_id').uuid('conversation_id', true).string('turn_id', 1, TURN_ID_MAX).custom('promises', promisesProblems(input?.promises)).done();
    return this.uow.run(async (tx) => {
      const agent = await this.agents.find(tx, input.organization_id, input.agent_id);
      if (!agent) throw notFound('agent');
      // The contact row, locked: an erasure that commits first is seen here; one that comes after
      // waits for this transaction and then deletes what it wrote.
      await this.contacts.ensure(tx, input.organization_id, input.contact_id);
      const contact = await this.contacts.find(tx, input.organization_id, input.contact_id, true);
      if (contact?.erased_at) throw notFound('contact');
      const now = this.clock.now();
      const [first, ...rest] = input.promises.map((p, position) => ({
        id: randomUUID(),
        organization_id: input.organization_id,
        agent_id: agent.id,
        turn_id: input.turn_id,
        position,
        contact_id: input.contact_id,
        conversation_id: input.conversation_id ?? null,
        text: p.text.trim(),
        due_at: p.due_at ? new Date(p.due_at) : null,
        created_at: now,
      }));
      const created = (await this.agents.insertPromises(tx, [first!])) > 0;
      if (created && rest.length) await this.agents.insertPromises(tx, rest);
      const rows = await this.agents.turn(tx, agent.id, input.turn_id);
      return { promises: rows.map(toTurnPromiseView), created };
    });
  }

  /** Newest first, cursor pages (limit 1–100, default 30). @throws AppError validation_failed, invalid_cursor */
  async list(input: TurnPromiseListData): Promise<CursorPage<TurnPromiseView>> {
    check(input).uuid('organization_id').uuid('agent_id', true).uuid('contact_id', true).string('turn_id', 1, TURN_ID_MAX, true).int('limit', 1, TURN_PROMISE_LIST_MAX_LIMIT, true).done();
    const filters = { agent_id: input.agent_id, contact_id: input.contact_id, turn_id: input.turn_id };
    const after = input.cursor ? decodeCursor(input.cursor, filters) : undefined;
    const limit = input.limit ?? TURN_PROMISE_LIST_DEFAULT_LIMIT;
    const rows = await this.agents.promisesPage(poolOf(this.uow.dataSource), { organizationId: input.organization_id, agentId: input.agent_id, contactId: input.contact_id, turnId: input.turn_id }, after, limit + 1);
    const page = rows.slice(0, limit);
    const last = page[page.length - 1];
    return { data: page.map(toTurnPromiseView), next_cursor: rows.length > limit && last ? encodeCursor({ createdAt: last.cursor_at, id: last.id }, filters) : null };
  }
}
