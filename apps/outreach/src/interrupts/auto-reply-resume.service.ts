import { Inject, Injectable } from '@nestjs/common';
import { DateTime } from 'luxon';
import { Counter } from 'prom-client';
import type { MessageReceivedData } from '@touchpoint/contracts';
import type { Tx } from '@touchpoint/database';
import { ScheduleMovesRepository } from './schedule-moves.repository.js';
import { type Logger, METRIC_PREFIX, Metrics } from '@touchpoint/observability';
import { LOGGER } from '@touchpoint/runtime';
import { findReturnDate } from '@touchpoint/text';
import { Clock } from '@touchpoint/time';
import { CampaignsRepository } from '../campaigns/campaigns.repository.js';
import { PeopleDirectory } from '../directory/people.directory.js';
import { EnrollmentsRepository } from '../enrollments/enrollments.repository.js';
import { addMs, DAY_MS } from '../decisions/next-check.js';

/** The latest an out-of-office moves the next check, days from now (ours). */
export const OUT_OF_OFFICE_MAX_DAYS = 30;

/**
 * What an auto-reply did to the schedule: `moved`, `no_date` (none stated: as before, nothing),
 * `not_waiting` (the enrollment is not active or has no next check: a draft waits for review, or
 * it ended), `repeat` (this message already moved it).
 */
export type ResumeResult = 'moved' | 'no_date' | 'not_waiting' | 'repeat';

/**
 * Out-of-office auto-resume (ours, beyond seed 003; the seed's auto-reply rule still holds: an
 * auto-reply is no reply, no opt-out and starts no decision, §4.7). When the auto-reply states a
 * return date (libs/text `findReturnDate`, chrono-node, read from the message's received time in
 * the contact's time zone, else UTC), the enrollment's next check moves to the start of the day
 * after it, in that zone, bounded to [now + the campaign's followup_min_days, now + 30 days]. No
 * date: nothing changes. Only an active enrollment with a next check moves (a draft waiting for
 * review has none, and the sweep must not wake it). The write is the next check alone, like
 * Execution's record (seed 003 §4.6): no version bump, no event; the sweep reads it. One move per
 * enrollment and message (`schedule_moves`), shown on the timeline.
 */
@Injectable()
export class AutoReplyResumeService {
  private readonly results: Counter<'result'>;

  constructor(
    private readonly enrollments: EnrollmentsRepository,
    private readonly moves: ScheduleMovesRepository,
    private readonly campaigns: CampaignsRepository,
    private readonly people: PeopleDirectory,
    private readonly clock: Clock,
    metrics: Metrics,
    @Inject(LOGGER) private readonly logger: Logger,
  ) {
    this.results = new Counter({ name: `${METRIC_PREFIX}outreach_out_of_office_total`, help: 'Auto-replies seen by the out-of-office resume, by result (moved, no_date, not_waiting, repeat)', labelNames: ['result'], registers: [metrics.registry] });
  }

  /** Applies one correlated auto-reply inside `tx` (the reply interrupt's transaction). */
  async apply(tx: Tx, organizationId: string, enrollmentId: string, personId: string, m: MessageReceivedData): Promise<ResumeResult> {
    const result = await this.decide(tx, organizationId, enrollmentId, personId, m);
    this.results.inc({ result });
    return result;
  }

  private async decide(tx: Tx, org: string, enrollmentId: string, personId: string, m: MessageReceivedData): Promise<ResumeResult> {
    const enrollment = await this.enrollments.find(tx, org, enrollmentId);
    if (!enrollment || enrollment.status !== 'active' || enrollment.next_check_at === null) return 'not_waiting';
    // The zone is a refinement: an unreadable contact reads the date in UTC rather than failing the message.
    const contact = await this.people.person(org, personId, 2000).catch(() => null);
    const zone = contact?.time_zone && DateTime.local().setZone(contact.time_zone).isValid ? contact.time_zone : 'UTC';
    const receivedAt = m.received_at && !Number.isNaN(Date.parse(m.received_at)) ? new Date(m.received_at) : this.clock.now();
    const found = findReturnDate(m.text, { receivedAt, timeZone: zone });
    if (!found) return 'no_date';
    const campaign = (await this.campaigns.find(tx, org, enrollment.campaign_id))!;
    const now = this.clock.now();
    const dayAfter = DateTime.fromISO(found.date, { zone }).plus({ days: 1 }).startOf('day').toJSDate();
    const min = addMs(now, campaign.followup_min_days * DAY_MS);
    const max = addMs(now, OUT_OF_OFFICE_MAX_DAYS * DAY_MS);
    const bounded = dayAfter < min ? 'min' : dayAfter > max ? 'max' : 'none';
    const next = bounded === 'min' ? min : bounded === 'max' ? max : dayAfter;
    const recorded = await this.moves.recordOnce(tx, {
      organizationId: org,
      enrollmentId,
      messageId: m.message_id,
      returnDate: found.date,
      returnText: found.text.slice(0, 200),
      timeZone: zone,
      previousNextCheckAt: enrollment.next_check_at,
      nextCheckAt: next,
      bounded,
      now,
    });
    if (!recorded) return 'repeat';
    await this.enrollments.moveNextCheck(tx, enrollmentId, next, now);
    this.logger.info({ event: 'outreach.out_of_office_moved', organization_id: org, enrollment_id: enrollmentId, message_id: m.message_id, return_date: found.date, next_check_at: next.toISOString(), bounded }, 'out-of-office return date moved the next check');
    return 'moved';
  }
}
