import { Inject, Injectable } from '@nestjs/common';
import { isUuid, requireString } from '@touchpoint/database';
import { type ActionApproveData, type ActionApprovedData, type ActionRejectData, type ActionView, OUTREACH_REJECT_REASON_MAX, OutreachEvents, type ReviewCard, type ReviewQueuePage, type ReviewQueueQuery } from '@touchpoint/contracts';
import { AppError, ErrorCode } from '@touchpoint/errors';
import type { Logger } from '@touchpoint/observability';
import { LOGGER, UnitOfWork } from '@touchpoint/runtime';
import { codePointLength, truncateText } from '@touchpoint/text';
import { Clock } from '@touchpoint/time';
import { REFERENCE_MAX_CHARS } from '../campaigns/campaigns.service.js';
import { PeopleDirectory } from '../directory/people.directory.js';
import { newTextOf } from '../context/context-render.js';
import { checkDraft, mergeDraftEdit } from '../drafting/draft-check.js';
import { EnrollmentsRepository } from '../enrollments/enrollments.repository.js';
import { decisionRequested } from '../enrollments/enrollments.service.js';
import { addMs, EVENT_LEASE_MS } from '../decisions/next-check.js';
import { ActionsRepository, toActionView } from './actions.repository.js';
import { approvedHash } from './canonical-json.js';
import { displayRecipient, recipientOf } from './recipient.js';
import { type ActionContextRow, ReviewRepository } from './review.repository.js';

/** Longest "Replying to" text on a card, characters (seed 003 §4.5). */
export const REPLYING_TO_MAX = 500;
/** Ends a "Replying to" that was cut (counts toward REPLYING_TO_MAX). */
export const REPLYING_TO_ELLIPSIS = '…';
/**
 * How long a card waits for its person from messaging, ms: under the gateway's 5 s deadline, so a
 * queue still answers (with "To" unknown) when messaging is down (as auto-reply-resume does).
 */
const CARD_PERSON_TIMEOUT_MS = 2000;
/** Default and largest page of the review queue (ours). */
const QUEUE_DEFAULT_LIMIT = 50;
const QUEUE_MAX_LIMIT = 200;

/** The `outreach.action.approved` message; its id names the attempt (`approved:{id}:{next_attempt_at}`). */
export function actionApproved(organizationId: string, actionId: string, enrollmentId: string, nextAttemptAt: Date) {
  const data: ActionApprovedData = { action_id: actionId, enrollment_id: enrollmentId };
  return { event_id: `approved:${actionId}:${nextAttemptAt.toISOString()}`, type: OutreachEvents.ActionApproved, organization_id: organizationId, data: data };
}

/**
 * The review queue (seed 003 §4.5): a person approves every outbound message. Approve freezes the
 * text and the recipient (`approved_payload`) under a hash; reject asks for a new draft or ends
 * the enrollment. Both are conditional writes from `pending_approval`, so a retried call answers
 * 200 and any other state 409 `action_not_pending`.
 */
@Injectable()
export class ReviewService {
  constructor(
    private readonly uow: UnitOfWork,
    private readonly review: ReviewRepository,
    private readonly actions: ActionsRepository,
    private readonly enrollments: EnrollmentsRepository,
    private readonly people: PeopleDirectory,
    private readonly clock: Clock,
    @Inject(LOGGER) private readonly logger: Logger,
  ) {}

  /** Pending actions, oldest first, each with its card, and the queue total. */
  async queue(query: ReviewQueueQuery): Promise<ReviewQueuePage> {
    const organizationId = requireString(query?.organization_id, 'organization_id', REFERENCE_MAX_CHARS);
    const limit = query.limit ?? QUEUE_DEFAULT_LIMIT;
    if (!Number.isInteger(limit) || limit < 1 || limit > QUEUE_MAX_LIMIT) throw new AppError(ErrorCode.ValidationFailed, `limit must be an integer from 1 to ${QUEUE_MAX_LIMIT}`, { field: 'limit' });
    const { rows, total } = await this.uow.run(async (tx) => ({ rows: await this.review.queue(tx, organizationId, limit), total: await this.review.queueTotal(tx, organizationId) }));
    const now = this.clock.now();
    const items = await Promise.all(rows.map((row) => this.card(row, now)));
    return { items, total };
  }

  private async card(row: ActionContextRow, now: Date): Promise<ReviewCard> {
    // The card reads the person fresh; an unreadable person still shows the draft. The short
    // timeout keeps the queue within the gateway's deadline when messaging is down ("To" unknown).
    const contact = await this.people.person(row.organization_id, row.person_id, CARD_PERSON_TIMEOUT_MS).catch(() => null);
    const company = contact?.custom_fields?.company;
    return {
      id: row.id,
      enrollment_id: row.enrollment_id,
      type: row.type,
      status: row.status,
      created_at: row.created_at.toISOString(),
      age_seconds: Math.max(0, Math.floor((now.getTime() - row.created_at.getTime()) / 1000)),
      person: { person_kind: row.person_kind, person_id: row.person_id, name: contact?.name ?? null, company: typeof company === 'string' ? company : null },
      campaign: { campaign_id: row.campaign_id, name: row.c_name, status: row.c_status },
      to: contact ? displayRecipient(recipientOf(row.type, contact)) : null,
      replying_to: replyingTo(row.d_reply_to_text),
      rationale: row.d_rationale,
      objective: row.d_objective,
      draft: row.draft_payload,
    };
  }

  /**
   * Approve (seed 003 §4.5), in order: 1 an impersonated session → 403; 2 enrollment active,
   * campaign active, outreach not stopped → else 409 with its code; 3 the draft with the edit
   * merged over it (`mergeDraftEdit`) passes the draft check → else 422 with its code; 4 `to` read fresh, `approved_payload` = text + to, `approved_hash`;
   * 5 the conditional update (a retry with the same hash → 200, otherwise 409
   * `action_not_pending`); 6 `outreach.action.approved`, in the same transaction.
   * @throws AppError forbidden, not_found, enrollment_not_active, campaign_not_active,
   *   outreach_stopped, draft_*, no_contact_address, action_not_pending, service_unavailable
   */
  async approve(data: ActionApproveData): Promise<ActionView> {
    if (data?.actor?.impersonated) throw new AppError(ErrorCode.Forbidden, 'an impersonated session cannot approve');
    const organizationId = requireString(data?.organization_id, 'organization_id', REFERENCE_MAX_CHARS);
    const actor = requireString(data.actor?.member_id, 'actor.member_id', REFERENCE_MAX_CHARS);
    const row = await this.mustFind(organizationId, data.action_id);
    assertLive(row);

    const checked = checkDraft(row.type, row.type === 'email' && !!row.d_reply_to_message_id, mergeDraftEdit(row.draft_payload, data.payload));
    if (!checked.ok) throw new AppError(checked.code, checked.message, { field: checked.field });

    const contact = await this.people.person(organizationId, row.person_id);
    const to = contact ? recipientOf(row.type, contact) : null;
    if (to === null) throw new AppError(ErrorCode.NoContactAddress, `the person has no ${row.type === 'email' ? 'email address' : 'LinkedIn profile'} now`);
    const payload = { ...checked.draft, to } as Record<string, unknown>;
    const hash = approvedHash(payload);

    const now = this.clock.now();
    const approved = await this.uow.run(async (tx) => {
      const moved = await this.actions.approve(tx, organizationId, row.id, { payload, hash, by: actor, now });
      if (moved) await tx.publish(actionApproved(organizationId, moved.id, moved.enrollment_id, moved.next_attempt_at!));
      return moved;
    });
    if (approved) {
      this.logger.info({ event: 'outreach.action_approved', organization_id: organizationId, action_id: row.id, edited: data.payload !== undefined, approved_by: actor, api_key_id: data.actor?.api_key_id ?? null }, 'action approved');
      return toActionView(approved);
    }
    const current = await this.uow.run((tx) => this.actions.find(tx, organizationId, row.id));
    if (current?.status === 'approved' && current.approved_hash === hash) return toActionView(current);
    throw new AppError(ErrorCode.ActionNotPending, 'the action is not waiting for approval', { status: current?.status ?? null });
  }

  /**
   * Reject (seed 003 §4.5): `regenerate` needs a reason of 1 to 1000 characters and asks for a new
   * decision (`rejected:{action_id}`, reason draft_rejected); `stop` ends the enrollment
   * (`user_exit`). A retry with the same `then` answers 200; any other state 409.
   * @throws AppError forbidden, validation_failed, not_found, action_not_pending
   */
  async reject(data: ActionRejectData): Promise<ActionView> {
    if (data?.actor?.impersonated) throw new AppError(ErrorCode.Forbidden, 'an impersonated session cannot reject');
    const organizationId = requireString(data?.organization_id, 'organization_id', REFERENCE_MAX_CHARS);
    const actor = requireString(data.actor?.member_id, 'actor.member_id', REFERENCE_MAX_CHARS);
    if (data.then !== 'regenerate' && data.then !== 'stop') throw new AppError(ErrorCode.ValidationFailed, 'then must be regenerate or stop', { field: 'then' });
    const reason = typeof data.reason === 'string' ? data.reason.trim() : '';
    if (data.then === 'regenerate' && reason.length === 0) throw new AppError(ErrorCode.ValidationFailed, 'regenerate needs a reason', { field: 'reason' });
    if (codePointLength(reason) > OUTREACH_REJECT_REASON_MAX) throw new AppError(ErrorCode.ValidationFailed, `reason must be at most ${OUTREACH_REJECT_REASON_MAX} characters`, { field: 'reason' });
    const row = await this.mustFind(organizationId, data.action_id);

    const now = this.clock.now();
    const rejected = await this.uow.run(async (tx) => {
      const moved = await this.actions.reject(tx, organizationId, row.id, { then: data.then, reason: reason || null, by: actor, now });
      if (!moved) return null;
      const enrollment = await this.enrollments.find(tx, organizationId, row.enrollment_id, true);
      if (enrollment && enrollment.status === 'active' && data.then === 'regenerate') {
        await this.enrollments.compareAndSet(tx, enrollment.id, enrollment.context_version, { next_check_at: addMs(now, EVENT_LEASE_MS) }, now);
        await tx.publish(decisionRequested(organizationId, `rejected:${row.id}`, { enrollment_id: enrollment.id, reason: 'draft_rejected', ref: row.id }));
      } else if (enrollment && enrollment.status !== 'ended' && data.then === 'stop') {
        await this.enrollments.compareAndSet(tx, enrollment.id, enrollment.context_version, { status: 'ended', ended_reason: 'user_exit', ended_at: now, next_check_at: null }, now);
        await this.actions.invalidate(tx, enrollment.id, ['pending_approval', 'approved'], 'user_exit', now);
      }
      return moved;
    });
    if (rejected) {
      this.logger.info({ event: 'outreach.action_rejected', organization_id: organizationId, action_id: row.id, then: data.then, rejected_by: actor, api_key_id: data.actor?.api_key_id ?? null }, 'action rejected');
      return toActionView(rejected);
    }
    const current = await this.uow.run((tx) => this.actions.find(tx, organizationId, row.id));
    if (current?.status === 'rejected' && current.reject_then === data.then) return toActionView(current);
    throw new AppError(ErrorCode.ActionNotPending, 'the action is not waiting for approval', { status: current?.status ?? null });
  }

  private async mustFind(organizationId: string, actionId: string): Promise<ActionContextRow> {
    const row = isUuid(actionId) ? await this.uow.run((tx) => this.review.withContext(tx, organizationId, actionId)) : null;
    if (!row) throw new AppError(ErrorCode.NotFound, 'action not found');
    return row;
  }
}

/** Approve step 2: the enrollment, the campaign and the organization can act. @throws AppError 409 codes */
function assertLive(row: ActionContextRow): void {
  if (row.e_status !== 'active') throw new AppError(ErrorCode.EnrollmentNotActive, 'the enrollment is not active', { status: row.e_status });
  if (row.c_status !== 'active') throw new AppError(ErrorCode.CampaignNotActive, `the campaign is ${row.c_status}`, { status: row.c_status });
  if (row.stopped_at) throw new AppError(ErrorCode.OutreachStopped, 'outreach is stopped for the organization');
}

/**
 * A reply card's "Replying to" (seed 003 §4.5): the inbound message's new text, quote-stripped as
 * in the context (seed 003 §4.2), cut to at most 500 code points ending in `…` when cut, so the
 * cut shows; null when nothing is left.
 */
export function replyingTo(text: string | null): string | null {
  const body = newTextOf(text);
  return body === '' ? null : truncateText(body, REPLYING_TO_MAX, { ellipsis: REPLYING_TO_ELLIPSIS });
}
