import { Inject, Injectable } from '@nestjs/common';
import { Counter } from 'prom-client';
import { type ContactView, OutboxCommands, type OutboxSuppressionData } from '@touchpoint/contracts';
import type { Tx } from '@touchpoint/database';
import { type Logger, METRIC_PREFIX, Metrics } from '@touchpoint/observability';
import { LOGGER, putSuppressionsInForce, RpcClient, UnitOfWork } from '@touchpoint/runtime';
import { Clock } from '@touchpoint/time';
import { type ChannelValue, channelValuesOf, includesValue, PeopleDirectory } from '../directory/people.directory.js';
import { PersonAddressesRepository } from '../directory/person-addresses.repository.js';
import { EnrollmentsRepository } from '../enrollments/enrollments.repository.js';
import { ActionsRepository } from '../review/actions.repository.js';
import { InterruptsRepository, type LiveEnrollment } from './interrupts.repository.js';

/** Compare-and-set tries per enrollment (seed 003 §4.7: read, then compare-and-set; 3 tries). */
const CAS_TRIES = 3;
/** People read from messaging at once for the enrollments the read model does not hold yet (ours: bounds the RPC fan-out). */
const MATCH_READ_CONCURRENCY = 10;

/**
 * Where a do-not-contact request came from (seed 003 §4.7, "Opt-out and bounce"):
 * - `phrase`: an opt-out phrase in a reply → every channel value of the person, enrollments ended `opted_out`;
 * - `unsubscribe`: the link in our email → the email only, enrollments ended `opted_out`;
 * - `bounce`: Nylas `bounce_detected` → the email only; enrollments stay live with v+1 and
 *   `next_check_at = now`, their pending and approved EMAIL actions invalidated, no event.
 */
export type SuppressionSource = 'phrase' | 'unsubscribe' | 'bounce';

export interface SuppressionRequest {
  organization_id: string;
  source: SuppressionSource;
  /** A stable id of the cause (the message id, the token's address, the bounce's message id): event ids derive from it. */
  cause_id: string;
  /** The values to suppress. */
  values: ChannelValue[];
  /** Contact ids whose live enrollments end whatever their current address (the replying person). */
  person_ids: string[];
}

export interface SuppressionOutcome {
  suppressed: ChannelValue[];
  /** The enrollments that were ended (phrase, unsubscribe) or moved (bounce). */
  enrollment_ids: string[];
}

/**
 * The three do-not-contact handlers (seed 003 §4.7 and §5 `contact_suppressions`). Each writes, in
 * one transaction and in this order: the suppression (an `outbox.suppress` command per value —
 * the dispatcher owns the list and upserts on its unique key), then the compare-and-set of every
 * live enrollment that matches by person id or by current address, then their invalidations. A
 * `sending` action is left to the sender's own suppression check. Nothing here ever removes a
 * suppression: only a user does, through the dispatcher's REST route (admin scope).
 */
@Injectable()
export class OptOutService {
  private readonly optOuts: Counter<'source'>;

  constructor(
    private readonly repo: InterruptsRepository,
    private readonly enrollments: EnrollmentsRepository,
    private readonly actions: ActionsRepository,
    private readonly people: PeopleDirectory,
    private readonly addresses: PersonAddressesRepository,
    private readonly clock: Clock,
    private readonly uow: UnitOfWork,
    private readonly rpc: RpcClient,
    metrics: Metrics,
    @Inject(LOGGER) private readonly logger: Logger,
  ) {
    this.optOuts = new Counter({ name: `${METRIC_PREFIX}outreach_suppressions_total`, help: 'Outreach do-not-contact requests handled, by source (phrase, unsubscribe, bounce)', labelNames: ['source'], registers: [metrics.registry] });
  }

  /**
   * Applies one request inside `tx`. A person messaging cannot read for the match is left out (and
   * logged): the suppression and every other match commit all the same.
   */
  async apply(tx: Tx, request: SuppressionRequest): Promise<SuppressionOutcome> {
    const values = dedupe(request.values);
    const org = request.organization_id;
    // 1 the suppression rows, first.
    await tx.publish(
      values.map((v) => {
        const data: OutboxSuppressionData = { organization_id: org, channel: v.channel, value: v.value, reason: reasonOf(request.source) };
        return { event_id: `outreach.suppress:${request.source}:${request.cause_id}:${v.channel}:${v.value}`, type: OutboxCommands.Suppress, organization_id: org, data: data };
      }),
    );
    // 2 + 3 every live enrollment that matches, then its actions.
    const matched = await this.match(tx, org, request.person_ids, values);
    const moved: string[] = [];
    for (const enrollment of matched) if (await this.moveOne(tx, enrollment.id, request.source)) moved.push(enrollment.id);
    this.optOuts.inc({ source: request.source });
    this.logger.info({ event: `outreach.${request.source === 'bounce' ? 'bounced' : 'opted_out'}`, organization_id: org, source: request.source, values: values.length, enrollments: moved.length }, 'do-not-contact request applied');
    return { suppressed: values, enrollment_ids: moved };
  }

  /**
   * Applies one request in its own transaction, then puts its values in force at the dispatcher
   * (`putSuppressionsInForce`, as messaging does for an opt-out by reply) before returning: from
   * the moment the unsubscribe link or the bounce webhook is answered, nothing queued or asked for
   * later to those addresses starts a wire attempt. The `outbox.suppress` commands `apply` published
   * carry the same rows and stay the durable path: the call only moves the moment forward, and the
   * dispatcher upserts. The transaction commits first, whatever the call does: a stop path commits
   * whatever else fails.
   * @throws AppError service_unavailable when the dispatcher did not confirm (committed all the
   *   same; the link or the provider repeats, and the repeat is idempotent)
   */
  async applyNow(request: SuppressionRequest): Promise<SuppressionOutcome> {
    const outcome = await this.uow.run((tx) => this.apply(tx, request));
    await putSuppressionsInForce(this.rpc, request.organization_id, outcome.suppressed, reasonOf(request.source), (v, err) =>
      this.logger.error({ event: 'outreach.suppression_not_in_force', organization_id: request.organization_id, source: request.source, channel: v.channel, err: (err as Error)?.message }, 'suppression stored here but not yet confirmed by the dispatcher'),
    );
    return outcome;
  }

  private async moveOne(tx: Tx, enrollmentId: string, source: SuppressionSource): Promise<boolean> {
    for (let attempt = 0; attempt < CAS_TRIES; attempt++) {
      const row = await this.enrollments.findById(tx, enrollmentId);
      if (!row || row.status === 'ended') return false;
      const now = this.clock.now();
      if (source === 'bounce') {
        // No event: the sweep asks with followup_due, and the decision sees email suppressed.
        const movedRow = await this.enrollments.compareAndSet(tx, row.id, row.context_version, { next_check_at: now }, now);
        if (!movedRow) continue;
        await this.repo.invalidateEmailActions(tx, row.id, 'bounced', now);
        return true;
      }
      const ended = await this.enrollments.compareAndSet(tx, row.id, row.context_version, { status: 'ended', ended_reason: 'opted_out', ended_at: now, next_check_at: null }, now);
      if (!ended) continue;
      await this.actions.invalidate(tx, row.id, ['pending_approval', 'approved'], 'opted_out', now);
      return true;
    }
    return false;
  }

  /**
   * The match (seed 003 §4.7): every live enrollment of the organization whose person is one of
   * `personIds` or holds one of `values` now. One indexed query on `person_addresses`, whatever
   * the number of live enrollments (a prospect and a CRM person with one address are two ids, so
   * both match). Only people enrolled before the read model existed, and not yet decided on since,
   * are read from messaging.
   */
  private async match(tx: Tx, org: string, personIds: string[], values: ChannelValue[]): Promise<LiveEnrollment[]> {
    const ids = personIds.filter((id) => typeof id === 'string' && id !== '');
    const matched = await this.addresses.liveMatching(tx, org, ids, values);
    const unknown = await this.addresses.liveWithoutAddresses(tx, org, ids);
    if (unknown.length === 0) return matched;
    const read: { e: LiveEnrollment; contact: ContactView }[] = [];
    let unread = 0;
    let next = 0;
    const worker = async () => {
      while (next < unknown.length) {
        const e = unknown[next++]!;
        try {
          const contact = await this.people.person(org, e.person_id);
          if (contact) read.push({ e, contact });
        } catch {
          // The stop commits whatever messaging does (DESIGN §5): the suppression already keeps
          // every sender off the address, and an unread person is read again at the next match.
          unread++;
        }
      }
    };
    await Promise.all(Array.from({ length: Math.min(MATCH_READ_CONCURRENCY, unknown.length) }, worker));
    if (unread) this.logger.warn({ event: 'outreach.opt_out_match_incomplete', organization_id: org, unread }, 'people not readable from messaging; their enrollments stay live, the suppression holds');
    // Each person read is kept, so the next match finds them by index.
    const now = this.clock.now();
    for (const r of read) await this.addresses.upsert(tx, org, r.contact, now);
    const byAddress = read.filter((r) => holdsAny(r.contact, values)).map((r) => r.e);
    return [...matched, ...byAddress].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  }
}

/** The dispatcher's `reason` of a row (seed 003 §5 `contact_suppressions`). */
function reasonOf(source: SuppressionSource): string {
  return source === 'bounce' ? 'bounced' : source === 'unsubscribe' ? 'unsubscribed' : 'opted_out';
}

function holdsAny(contact: ContactView, values: ChannelValue[]): boolean {
  return channelValuesOf(contact).some((v) => includesValue(values, v.channel, v.value));
}

function dedupe(values: ChannelValue[]): ChannelValue[] {
  const seen = new Set<string>();
  return values
    .map((v) => ({ channel: v.channel, value: v.channel === 'email' ? v.value.trim().toLowerCase() : v.value.trim() }))
    .filter((v) => {
      const key = `${v.channel}\u0000${v.value}`;
      if (v.value === '' || seen.has(key)) return false;
      seen.add(key);
      return true;
    });
}
