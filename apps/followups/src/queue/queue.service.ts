import { Injectable } from '@nestjs/common';
import type { CursorPage, QueueItemView, QueueListData } from '@touchpoint/contracts';
import { UnitOfWork } from '@touchpoint/runtime';
import { decodeCursor, encodeCursor, poolOf } from '@touchpoint/database';
import { check } from '../input-checks/input-checks.js';
import { QueueRepository } from './queue.repository.js';

/** (created_at, kind, id) descending: created_at strings are fixed-width UTC, so they compare as text. */
const byQueueOrder = (a: { cursor_at: string; kind: string; id: string }, b: { cursor_at: string; kind: string; id: string }): number => b.cursor_at.localeCompare(a.cursor_at) || b.kind.localeCompare(a.kind) || (b.id < a.id ? -1 : b.id > a.id ? 1 : 0);

/** Queue limits (seed 002 "GET /ai/followups/queue": limit 1–100, default 30; q up to 100). */
export const QUEUE_DEFAULT_LIMIT = 30;
export const QUEUE_MAX_LIMIT = 100;

/**
 * The follow-up queue (seed 002 "Fila"): enrollments and one-off returns in one cursor-paged list,
 * newest first (ties: returns before enrollments, then id), filtered by `kind`; a `flow_id` filter
 * leaves returns out (they belong to no flow).
 */
@Injectable()
export class QueueService {
  constructor(
    private readonly uow: UnitOfWork,
    private readonly queue: QueueRepository,
  ) {}

  /** @throws AppError invalid_cursor (bad, stale, or issued for other filters), validation_failed */
  async list(input: QueueListData): Promise<CursorPage<QueueItemView>> {
    check(input).uuid('organization_id').oneOf('kind', ['enrollment', 'promise'], true).uuid('flow_id', true).uuid('contact_id', true).string('status', 1, 40, true).string('q', 1, 100, true).string('cursor', 1, 1024, true).int('limit', 1, QUEUE_MAX_LIMIT, true).done();
    const filters = { kind: input.kind, flow_id: input.flow_id, status: input.status, q: input.q, contact_id: input.contact_id };
    const after = input.cursor ? decodeCursor(input.cursor, filters) : undefined;
    const limit = input.limit ?? QUEUE_DEFAULT_LIMIT;
    const filter = { organizationId: input.organization_id, flowId: input.flow_id, status: input.status, contactId: input.contact_id, q: input.q?.trim() || undefined };
    const position = after && { createdAt: after.createdAt, kind: after.kind ?? 'enrollment', id: after.id };
    const db = poolOf(this.uow.dataSource);
    // Each side is read in the merged order and the pages merged: both are keyset-stable on their own.
    const [enrollments, promises] = await Promise.all([input.kind === 'promise' ? [] : this.queue.enrollmentsPage(db, filter, position, limit + 1), input.kind === 'enrollment' || input.flow_id ? [] : this.queue.promisesPage(db, filter, position, limit + 1)]);
    const rows = [...enrollments, ...promises].sort(byQueueOrder);
    const page = rows.slice(0, limit);
    const last = page[page.length - 1];
    return {
      data: page.map(({ cursor_at: _c, ...item }) => item),
      next_cursor: rows.length > limit && last ? encodeCursor({ createdAt: last.cursor_at, id: last.id, kind: last.kind }, filters) : null,
    };
  }
}
