import { Inject, Injectable } from '@nestjs/common';
import type { TimelineItem } from '@touchpoint/contracts';
import { AppError, ErrorCode } from '@touchpoint/errors';
import type { Logger } from '@touchpoint/observability';
import { LOGGER, UnitOfWork } from '@touchpoint/runtime';
import { REFERENCE_MAX_CHARS } from '../campaigns/campaigns.service.js';
import { ThreadReader } from '../context/thread-reader.js';
import { DecisionsRepository } from '../decisions/decisions.repository.js';
import { EnrollmentsRepository } from '../enrollments/enrollments.repository.js';
import { ScheduleMovesRepository } from '../interrupts/schedule-moves.repository.js';
import { ActionsRepository } from '../review/actions.repository.js';
import { iso, isUuid, requireString } from '@touchpoint/database';

/**
 * The enrollment drawer's timeline (seed 003 §4.5): this enrollment only, from the reads of §4.2 —
 * enrolled, decisions, proposed actions, the Outreach thread emails, LinkedIn messages, the next
 * checks an out-of-office return date moved, ended —
 * newest first, ties broken on id, items with no time last. The CRM's own activity is merged by
 * the client, never read here.
 */
@Injectable()
export class TimelineService {
  constructor(
    private readonly uow: UnitOfWork,
    private readonly enrollments: EnrollmentsRepository,
    private readonly decisions: DecisionsRepository,
    private readonly actions: ActionsRepository,
    private readonly threads: ThreadReader,
    private readonly moves: ScheduleMovesRepository,
    @Inject(LOGGER) private readonly logger: Logger,
  ) {}

  /** @throws AppError not_found */
  async of(organizationId: string, enrollmentId: string): Promise<{ enrollment_id: string; items: TimelineItem[]; missing: string[] }> {
    const read = await this.uow.run(async (tx) => {
      const enrollment = isUuid(enrollmentId) ? await this.enrollments.find(tx, requireString(organizationId, 'organization_id', REFERENCE_MAX_CHARS), enrollmentId) : null;
      if (!enrollment) throw new AppError(ErrorCode.NotFound, 'enrollment not found');
      return {
        enrollment,
        decisions: await this.decisions.ofEnrollment(tx, enrollment.id, 500),
        actions: await this.actions.ofEnrollment(tx, enrollment.id),
        moves: await this.moves.ofEnrollment(tx, enrollment.id),
      };
    });
    const { enrollment, decisions, actions, moves } = read;
    const items: TimelineItem[] = [{ id: `enrolled:${enrollment.id}`, kind: 'enrolled', at: iso(enrollment.created_at), data: { campaign_id: enrollment.campaign_id, person_kind: enrollment.person_kind, person_id: enrollment.person_id } }];
    for (const d of decisions) {
      items.push({
        id: d.id,
        kind: 'decision',
        at: iso(d.created_at),
        data: { outcome: d.outcome, type: d.type, rationale: d.rationale, objective: d.objective, trigger_reason: d.trigger_reason, failure_reason: d.failure_reason, followup_days: d.followup_days },
      });
    }
    for (const a of actions) {
      items.push({
        id: a.id,
        kind: 'action',
        at: iso(a.executed_at ?? a.created_at),
        data: { type: a.type, status: a.status, draft: a.draft_payload, approved_payload: a.approved_payload, reject_reason: a.reject_reason, failure_reason: a.failure_reason, outcome_unknown: a.outcome_unknown, message_id: a.message_id },
      });
    }
    for (const mv of moves) {
      items.push({
        id: mv.id,
        kind: 'next_check_moved',
        at: iso(mv.created_at),
        data: { message_id: mv.message_id, return_date: mv.return_date, return_text: mv.return_text, time_zone: mv.time_zone, previous_next_check_at: iso(mv.previous_next_check_at), next_check_at: iso(mv.next_check_at), bounded: mv.bounded },
      });
    }
    const missing: string[] = [];
    try {
      const threads = await this.threads.read(enrollment.organization_id, actions);
      for (const m of threads.email) items.push({ id: m.id, kind: 'email', at: m.sent_at ?? m.created_at, data: { direction: m.direction, subject: m.subject, body: m.body, status: m.status, thread_id: m.thread_id } });
      for (const m of threads.linkedin) items.push({ id: m.id, kind: 'linkedin_message', at: m.sent_at ?? m.created_at, data: { direction: m.direction, body: m.body, status: m.status } });
    } catch (err) {
      // The drawer still shows what outreach holds; the thread is named missing.
      missing.push('thread');
      this.logger.warn({ event: 'outreach.timeline_thread_failed', organization_id: organizationId, enrollment_id: enrollmentId, err: (err as Error).message }, 'thread unreadable');
    }
    if (enrollment.status === 'ended') items.push({ id: `ended:${enrollment.id}`, kind: 'ended', at: iso(enrollment.ended_at), data: { ended_reason: enrollment.ended_reason } });
    items.sort(newestFirst);
    return { enrollment_id: enrollment.id, items, missing };
  }
}

/** Newest first, tie on id (descending), no time last (seed 003 §4.5). */
export function newestFirst(a: TimelineItem, b: TimelineItem): number {
  if (a.at === null || b.at === null) return a.at === b.at ? (a.id < b.id ? 1 : a.id > b.id ? -1 : 0) : a.at === null ? 1 : -1;
  const d = Date.parse(b.at) - Date.parse(a.at);
  if (d !== 0) return d;
  return a.id < b.id ? 1 : a.id > b.id ? -1 : 0;
}
