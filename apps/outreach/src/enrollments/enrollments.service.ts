import { decodeCursor, encodeCursor, isUuid, requireString } from '@touchpoint/database';
import { Inject, Injectable } from '@nestjs/common';
import {
  type ContactView,
  type DecisionRequestedData,
  type EnrollBatchData,
  type EnrollBatchResult,
  type EnrollOneData,
  type EnrollResult,
  type OutreachEnrollmentListQuery,
  type OutreachEnrollmentView,
  OUTREACH_MAX_BATCH,
  OUTREACH_MAX_LIVE_PER_CAMPAIGN,
  OutreachEvents,
  type PersonKind,
  type PersonRef,
} from '@touchpoint/contracts';
import type { Tx } from '@touchpoint/database';
import { AppError, ErrorCode } from '@touchpoint/errors';
import type { Logger } from '@touchpoint/observability';
import { APP_CONFIG, LOGGER, UnitOfWork } from '@touchpoint/runtime';
import { Clock } from '@touchpoint/time';
import { type CampaignRow, CampaignsRepository } from '../campaigns/campaigns.repository.js';
import { REFERENCE_MAX_CHARS } from '../campaigns/campaigns.service.js';
import { type ChannelValue, channelValuesOf, includesValue, PeopleDirectory } from '../directory/people.directory.js';
import { PersonAddressesRepository } from '../directory/person-addresses.repository.js';
import type { OutreachConfig } from '../outreach.config.js';
import { ActionsRepository } from '../review/actions.repository.js';
import { addMs, EVENT_LEASE_MS } from '../decisions/next-check.js';
import { type EnrollmentRow, EnrollmentsRepository, type LiveEnrollmentRow, toOutreachEnrollmentView } from './enrollments.repository.js';

/** Time kept for the answer to travel back inside the caller's RPC deadline, ms (ours). */
const NESTED_READ_MARGIN_MS = 1000;
/** Shortest deadline of a nested read, however little of the caller's deadline is left, ms (ours). */
const MIN_NESTED_READ_MS = 250;
/** People read from messaging at once while a batch is checked (ours: bounds the RPC fan-out). */
const PERSON_READ_CONCURRENCY = 10;

/** Compare-and-set tries of the reply interrupt (seed 003 §4.7: read, then compare-and-set; 3 tries). */
const INTERRUPT_TRIES = 3;

/** The `outreach.decision.requested` message of a cause. */
export function decisionRequested(organizationId: string, eventId: string, data: DecisionRequestedData) {
  return { event_id: eventId, type: OutreachEvents.DecisionRequested, organization_id: organizationId, data: data };
}

/**
 * Enrollment (seed 003 §4.1). Per person, in list order: 1 the campaign exists and is not archived
 * (paused is accepted), 2 the person exists (a prospect linked to a CRM person becomes that
 * person), 3 their addresses are not suppressed, 4 one live enrollment per person across every
 * campaign (the partial unique index decides), 5 the campaign has fewer than 200 live enrollments.
 *
 * The cap is counted again after the insert commits, under a per-campaign lock, and the rows past
 * it are taken back before their first event goes out, so two racing batches never leave more
 * than 200 live. A crash between the insert and the recount leaves a row with no event: its
 * `next_check_at` (the event lease) makes the due sweep ask for it.
 */
@Injectable()
export class EnrollmentsService {
  constructor(
    private readonly uow: UnitOfWork,
    private readonly enrollments: EnrollmentsRepository,
    private readonly campaigns: CampaignsRepository,
    private readonly actions: ActionsRepository,
    private readonly people: PeopleDirectory,
    private readonly addresses: PersonAddressesRepository,
    private readonly clock: Clock,
    @Inject(APP_CONFIG) private readonly config: OutreachConfig,
    @Inject(LOGGER) private readonly logger: Logger,
  ) {}

  /**
   * Enrolls one person.
   * @returns the enrollment (the existing one for the same person in the same campaign)
   * @throws AppError not_found (campaign or person), campaign_archived, already_enrolled (with the
   *   other campaign's name and status), campaign_full, opted_out, service_unavailable
   */
  async enrollOne(data: EnrollOneData): Promise<OutreachEnrollmentView & { created: boolean }> {
    const { results } = await this.enroll({ organization_id: data.organization_id, campaign_id: data.campaign_id, people: [{ person_kind: data.person_kind, person_id: data.person_id }] });
    const result = results[0]!;
    switch (result.result) {
      case 'added':
        return { ...(await this.get(data.organization_id, result.enrollment_id)), created: !result.existing };
      case 'already_enrolled':
        throw new AppError(ErrorCode.AlreadyEnrolled, `the person is live in the campaign "${result.campaign_name}"; exit them there first`, {
          enrollment_id: result.enrollment_id,
          campaign_id: result.campaign_id,
          campaign_name: result.campaign_name,
          campaign_status: result.campaign_status,
        });
      case 'campaign_full':
        throw new AppError(ErrorCode.CampaignFull, `the campaign has ${OUTREACH_MAX_LIVE_PER_CAMPAIGN} live enrollments`);
      case 'opted_out':
        throw new AppError(ErrorCode.OptedOut, 'the person is on the do-not-contact list');
      case 'not_found':
        throw new AppError(ErrorCode.NotFound, 'person not found');
    }
  }

  /**
   * Enrolls up to 200 people; one result per person, in the order given. One refusal never blocks
   * the others.
   * @throws AppError batch_too_large (more than 200), validation_failed, not_found (campaign),
   *   campaign_archived, service_unavailable (messaging or the suppression list unreadable)
   */
  async enroll(data: EnrollBatchData): Promise<EnrollBatchResult> {
    const startedAt = Date.now();
    const organizationId = requireString(data?.organization_id, 'organization_id', REFERENCE_MAX_CHARS);
    const people = validatePeople(data.people);
    const campaign = await this.uow.run((tx) => this.campaigns.find(tx, organizationId, requireCampaignId(data.campaign_id)));
    if (!campaign) throw new AppError(ErrorCode.NotFound, 'campaign not found');
    if (campaign.status === 'archived') throw new AppError(ErrorCode.CampaignArchived, 'the campaign is archived');

    // Checks 2 and 3 read other services: done before any transaction opens. Our caller (the
    // gateway) gives up after its own RPC_TIMEOUT_MS: each read ends a margin before that, so a
    // service that cannot answer is named as such, not as "outreach did not answer".
    const budgetMs = () => Math.max(MIN_NESTED_READ_MS, startedAt + this.config.RPC_TIMEOUT_MS - NESTED_READ_MARGIN_MS - Date.now());
    const persons = await this.readPeople(organizationId, people, budgetMs);
    const values = persons.flatMap((p) => (p.contact ? channelValuesOf(p.contact, campaign.allowed_channels) : []));
    const suppressed = await this.people.suppressed(organizationId, dedupe(values), budgetMs());

    const results: (EnrollResult | null)[] = people.map(() => null);
    const candidates: { index: number; kind: PersonKind; id: string }[] = [];
    persons.forEach((p, index) => {
      const ref = people[index]!;
      if (!p.contact) results[index] = { ...ref, result: 'not_found' };
      else if (isOptedOut(channelValuesOf(p.contact, campaign.allowed_channels), suppressed)) results[index] = { ...ref, result: 'opted_out' };
      else candidates.push({ index, kind: p.kind, id: p.contact.id });
    });

    const now = this.clock.now();
    const inserted = await this.uow.run(async (tx) => {
      let live = await this.enrollments.countLive(tx, campaign.id);
      const mine: { index: number; row: EnrollmentRow }[] = [];
      for (const c of candidates) {
        const ref = people[c.index]!;
        const existing = await this.enrollments.findLiveOfPerson(tx, organizationId, c.id);
        if (existing) {
          results[c.index] = liveResult(ref, existing, campaign.id);
          continue;
        }
        if (live >= OUTREACH_MAX_LIVE_PER_CAMPAIGN) {
          results[c.index] = { ...ref, result: 'campaign_full' };
          continue;
        }
        const row = await this.enrollments.insertLive(tx, { organization_id: organizationId, campaign_id: campaign.id, person_kind: c.kind, person_id: c.id, next_check_at: addMs(now, EVENT_LEASE_MS), now });
        if (!row) {
          // Another request enrolled the person between the read and the insert.
          const winner = await this.enrollments.findLiveOfPerson(tx, organizationId, c.id);
          results[c.index] = winner ? liveResult(ref, winner, campaign.id) : { ...ref, result: 'campaign_full' };
          continue;
        }
        live += 1;
        // The opt-out and bounce match finds the person by these values (seed 003 §4.7, The match).
        await this.addresses.upsert(tx, organizationId, persons[c.index]!.contact!, now);
        mine.push({ index: c.index, row });
        results[c.index] = { ...ref, result: 'added', enrollment_id: row.id, existing: false };
      }
      return mine;
    });

    if (inserted.length) {
      const takenBack = await this.uow.run(async (tx) => {
        await this.enrollments.lockCapRecount(tx, campaign.id);
        const live = await this.enrollments.countLive(tx, campaign.id);
        const taken = await this.enrollments.takeBack(
          tx,
          inserted.map((i) => i.row.id),
          live - OUTREACH_MAX_LIVE_PER_CAMPAIGN,
        );
        const kept = inserted.filter((i) => !taken.includes(i.row.id));
        await tx.publish(kept.map((i) => decisionRequested(organizationId, `enrolled:${i.row.id}`, { enrollment_id: i.row.id, reason: 'enrolled' })));
        return taken;
      });
      for (const i of inserted) if (takenBack.includes(i.row.id)) results[i.index] = { ...people[i.index]!, result: 'campaign_full' };
      this.logger.info({ event: 'outreach.enrolled', organization_id: organizationId, campaign_id: campaign.id, added: inserted.length - takenBack.length, taken_back: takenBack.length }, 'people enrolled');
    }
    return { campaign_id: campaign.id, results: results as EnrollResult[] };
  }

  /** @throws AppError not_found */
  async get(organizationId: string, enrollmentId: string): Promise<OutreachEnrollmentView> {
    const row = isUuid(enrollmentId) ? await this.uow.run((tx) => this.enrollments.find(tx, requireString(organizationId, 'organization_id', REFERENCE_MAX_CHARS), enrollmentId)) : null;
    if (!row) throw new AppError(ErrorCode.NotFound, 'enrollment not found');
    return toOutreachEnrollmentView(row);
  }

  /**
   * A keyset page of a campaign's enrollments, newest first; `next_cursor` is null on the last page.
   * @throws AppError not_found (no such campaign in the organization), validation_failed (limit), invalid_cursor (malformed, or issued for another campaign or status)
   */
  async list(query: OutreachEnrollmentListQuery): Promise<{ items: OutreachEnrollmentView[]; next_cursor: string | null }> {
    const limit = query.limit ?? 200;
    if (!Number.isInteger(limit) || limit < 1 || limit > 500) throw new AppError(ErrorCode.ValidationFailed, 'limit must be an integer from 1 to 500', { field: 'limit' });
    const organizationId = requireString(query.organization_id, 'organization_id', REFERENCE_MAX_CHARS);
    const campaignId = requireCampaignId(query.campaign_id);
    const filters = { campaign_id: campaignId, status: query.status };
    const after = query.cursor === undefined ? undefined : decodeCursor(String(query.cursor), filters);
    const rows = await this.uow.run(async (tx) => {
      // Another organization's campaign, like a missing one, is not found (never an empty list).
      if (!(await this.campaigns.find(tx, organizationId, campaignId))) throw new AppError(ErrorCode.NotFound, 'campaign not found');
      return this.enrollments.list(tx, organizationId, campaignId, query.status, after, limit + 1);
    });
    const page = rows.slice(0, limit);
    const last = page[page.length - 1];
    return { items: page.map(toOutreachEnrollmentView), next_cursor: rows.length > limit && last ? encodeCursor({ createdAt: last.cursor_at, id: last.id }, filters) : null };
  }

  /**
   * The user exits a person (seed 003 §4.1): ended `user_exit`, v+1, pending and approved actions
   * invalidated. A sending action goes on.
   * @throws AppError not_found, enrollment_not_active (already ended)
   */
  async exit(organizationId: string, enrollmentId: string): Promise<OutreachEnrollmentView> {
    await this.uow.run(async (tx) => {
      const row = await this.mustFindLocked(tx, organizationId, enrollmentId);
      if (row.status === 'ended') throw new AppError(ErrorCode.EnrollmentNotActive, 'the enrollment has ended');
      await this.endInTx(tx, row, 'user_exit');
    });
    return this.get(organizationId, enrollmentId);
  }

  /** Ends a locked live enrollment with `reason` and invalidates its pending and approved actions. */
  async endInTx(tx: Tx, row: EnrollmentRow, reason: EnrollmentRow['ended_reason'] & string): Promise<void> {
    const now = this.clock.now();
    await this.enrollments.compareAndSet(tx, row.id, row.context_version, { status: 'ended', ended_reason: reason, ended_at: now, next_check_at: null }, now);
    await this.actions.invalidate(tx, row.id, ['pending_approval', 'approved'], reason, now);
  }

  /**
   * The core write of a reply (seed 003 §4.7, the reply interrupt): the compare-and-set bump
   * first (read, then `context_version = v`, up to 3 tries), with `next_check_at = now + 30 min`
   * when the caller sends a decision event right after, else now; then every pending and approved
   * action is invalidated (a sending one goes on). A draft saved before the bump fails its gate; one
   * saved after it is caught by the invalidation. Returns the new version, or null when the
   * enrollment is not live or kept moving.
   */
  async interrupt(tx: Tx, enrollmentId: string, eventFollows: boolean): Promise<number | null> {
    for (let attempt = 0; attempt < INTERRUPT_TRIES; attempt++) {
      const row = await this.enrollments.findById(tx, enrollmentId);
      if (!row || row.status === 'ended') return null;
      const now = this.clock.now();
      const moved = await this.enrollments.compareAndSet(tx, row.id, row.context_version, { next_check_at: eventFollows ? addMs(now, EVENT_LEASE_MS) : now }, now);
      if (!moved) continue;
      await this.actions.invalidate(tx, row.id, ['pending_approval', 'approved'], 'context_changed', now);
      return moved.context_version;
    }
    return null;
  }

  /**
   * A promoted prospect's enrollment follows them to their CRM person (seed 003 §4.1, Prospect
   * promotion), in the caller's transaction. When that person id is already live in another
   * enrollment, one of the two ends `duplicate`: on a promotion by a reply the replied enrollment
   * (this one) wins and the other ends; on any other promotion the moved one ends. Each ending
   * invalidates that enrollment's pending and approved drafts (a sending one goes on).
   * @returns which enrollment ended `duplicate`, or null when none did (also when this one is not live)
   */
  async promote(tx: Tx, enrollmentId: string, crmPersonId: string, cause: 'reply' | 'user'): Promise<string | null> {
    const row = await this.enrollments.findById(tx, enrollmentId);
    if (!row || row.status === 'ended') return null;
    const locked = (await this.enrollments.find(tx, row.organization_id, row.id, true))!;
    const other = await this.enrollments.findLiveOfPerson(tx, row.organization_id, crmPersonId, { lock: true, exceptId: row.id });
    const now = this.clock.now();
    if (other && cause === 'user') {
      await this.endInTx(tx, locked, 'duplicate');
      return locked.id;
    }
    if (other) await this.endInTx(tx, other, 'duplicate');
    await this.enrollments.moveToCrmPerson(tx, locked.id, crmPersonId, now);
    return other?.id ?? null;
  }

  /**
   * A save that links a prospect to its CRM person (seed 003 §4.1, Prospect promotion: a human
   * choice): the prospect's live enrollment moves to that CRM person, or ends `duplicate` when the
   * CRM person is already live in another enrollment. In the caller's transaction.
   * @returns the enrollment moved or ended, or null when the prospect has no live enrollment
   */
  async promoteByLink(tx: Tx, organizationId: string, prospectId: string, crmPersonId: string): Promise<{ enrollment_id: string; ended_duplicate: boolean } | null> {
    const live = await this.enrollments.findLiveOfPerson(tx, organizationId, prospectId);
    if (!live || live.person_kind !== 'prospect' || prospectId === crmPersonId) return null;
    const ended = await this.promote(tx, live.id, crmPersonId, 'user');
    this.logger.info(
      { event: ended ? 'outreach.enrollment_duplicate' : 'outreach.prospect_promoted', organization_id: organizationId, enrollment_id: live.id, contact_id: crmPersonId, cause: 'link' },
      ended ? 'linked CRM person is live elsewhere; the moved enrollment ended duplicate' : 'prospect enrollment moved to its linked CRM person',
    );
    return { enrollment_id: live.id, ended_duplicate: ended === live.id };
  }

  /**
   * `needs_contact_data → active` after the user added contact data (seed 003 §4.1): v+1, the event
   * lease, and a decision with reason `manual_retry`.
   * @throws AppError not_found, conflict (not waiting for contact data)
   */
  async manualRetry(organizationId: string, enrollmentId: string): Promise<OutreachEnrollmentView> {
    await this.uow.run(async (tx) => {
      const row = await this.mustFindLocked(tx, organizationId, enrollmentId);
      if (row.status !== 'needs_contact_data') throw new AppError(ErrorCode.Conflict, 'only an enrollment that needs contact data can be retried', { status: row.status });
      const now = this.clock.now();
      const moved = (await this.enrollments.compareAndSet(tx, row.id, row.context_version, { status: 'active', next_check_at: addMs(now, EVENT_LEASE_MS) }, now))!;
      await tx.publish(decisionRequested(organizationId, `retry:${row.id}:${moved.context_version}`, { enrollment_id: row.id, reason: 'manual_retry' }));
    });
    return this.get(organizationId, enrollmentId);
  }

  private async mustFindLocked(tx: Tx, organizationId: string, enrollmentId: string): Promise<EnrollmentRow> {
    const row = isUuid(enrollmentId) ? await this.enrollments.find(tx, requireString(organizationId, 'organization_id', REFERENCE_MAX_CHARS), enrollmentId, true) : null;
    if (!row) throw new AppError(ErrorCode.NotFound, 'enrollment not found');
    return row;
  }

  /** Reads each person (check 2), following a prospect's link to its CRM person. */
  /** @param budgetMs the deadline left for a read, ms, asked before each one */
  private async readPeople(organizationId: string, people: PersonRef[], budgetMs: () => number): Promise<{ kind: PersonKind; contact: ContactView | null }[]> {
    const out: { kind: PersonKind; contact: ContactView | null }[] = new Array(people.length);
    let next = 0;
    const worker = async () => {
      while (next < people.length) {
        const i = next++;
        const ref = people[i]!;
        let contact = await this.people.person(organizationId, ref.person_id, budgetMs());
        if (contact && contact.kind !== ref.person_kind) contact = null;
        let kind = ref.person_kind;
        if (contact && kind === 'prospect' && contact.linked_contact_id) {
          const crm = await this.people.person(organizationId, contact.linked_contact_id, budgetMs());
          if (crm && crm.kind === 'crm') {
            contact = crm;
            kind = 'crm';
          }
        }
        out[i] = { kind, contact };
      }
    };
    await Promise.all(Array.from({ length: Math.min(PERSON_READ_CONCURRENCY, people.length) }, worker));
    return out;
  }
}

function liveResult(ref: PersonRef, live: LiveEnrollmentRow, campaignId: string): EnrollResult {
  if (live.campaign_id === campaignId) return { ...ref, result: 'added', enrollment_id: live.id, existing: true };
  return { ...ref, result: 'already_enrolled', enrollment_id: live.id, campaign_id: live.campaign_id, campaign_name: live.campaign_name, campaign_status: live.campaign_status as CampaignRow['status'] };
}

/**
 * Refused as opted out when the person has addresses on the campaign's channels and every one of
 * them is on the do-not-contact list (a bounced email alone leaves LinkedIn open, seed 003 §4.7).
 */
export function isOptedOut(values: ChannelValue[], suppressed: ChannelValue[]): boolean {
  return values.length > 0 && values.every((v) => includesValue(suppressed, v.channel, v.value));
}

function dedupe(values: ChannelValue[]): ChannelValue[] {
  const seen = new Set<string>();
  return values.filter((v) => {
    const key = `${v.channel}\u0000${v.value}`;
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
}

function requireCampaignId(value: unknown): string {
  if (!isUuid(value)) throw new AppError(ErrorCode.NotFound, 'campaign not found');
  return value;
}

/** @throws AppError batch_too_large above 200 people, validation_failed for a malformed person */
function validatePeople(people: unknown): PersonRef[] {
  if (!Array.isArray(people) || people.length === 0) throw new AppError(ErrorCode.ValidationFailed, 'people must be a non-empty list', { field: 'people' });
  if (people.length > OUTREACH_MAX_BATCH) throw new AppError(ErrorCode.BatchTooLarge, `a batch holds at most ${OUTREACH_MAX_BATCH} people`, { max: OUTREACH_MAX_BATCH, given: people.length });
  return people.map((p, i) => {
    const ref = p as PersonRef;
    if (!ref || (ref.person_kind !== 'crm' && ref.person_kind !== 'prospect') || typeof ref.person_id !== 'string' || ref.person_id === '' || ref.person_id.length > 200) {
      throw new AppError(ErrorCode.ValidationFailed, `people[${i}] needs person_kind (crm or prospect) and person_id`, { field: `people[${i}]` });
    }
    return { person_kind: ref.person_kind, person_id: ref.person_id };
  });
}
