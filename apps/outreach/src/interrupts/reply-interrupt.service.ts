import { Inject, Injectable } from '@nestjs/common';
import { Counter } from 'prom-client';
import { type MessageReceivedData, MessagingRpc } from '@touchpoint/contracts';
import type { Tx } from '@touchpoint/database';
import { type Logger, METRIC_PREFIX, Metrics } from '@touchpoint/observability';
import { APP_CONFIG, LOGGER, RpcClient } from '@touchpoint/runtime';
import { type ChannelValue, channelValuesOf, PeopleDirectory } from '../directory/people.directory.js';
import { decisionRequested, EnrollmentsService } from '../enrollments/enrollments.service.js';
import type { OutreachConfig } from '../outreach.config.js';
import { AutoReplyResumeService } from './auto-reply-resume.service.js';
import { InterruptsRepository } from './interrupts.repository.js';
import { OptOutService } from './opt-out.service.js';

/**
 * What the interrupt did with one inbound message (the metric's `result` label):
 * `uncorrelated` (no action of ours answered), `not_live`, `duplicate` (a decision is already saved
 * for `reply:{message_id}`), `auto_reply`, `opt_out`, `interrupted` (bumped; the decision event
 * sent), `held` (bumped; campaign paused or outreach stopped, the sweep asks after resume), `lost`
 * (the enrollment ended while we tried).
 */
export type InterruptResult = 'uncorrelated' | 'not_live' | 'duplicate' | 'auto_reply' | 'opt_out' | 'interrupted' | 'held' | 'lost';

/**
 * The reply interrupt (seed 003 §4.7), run from messaging's `messaging.message.received` for
 * inbound email and LinkedIn. Messaging stores an inbound once per provider id (whichever Nylas
 * webhook type — `message.created` or `message.updated` — or Unipile delivery stores it first) and
 * publishes the event once for that row, with an id derived from the row; the bus inbox drops a
 * redelivery. So the interrupt runs once per message, and the saved decision for
 * `reply:{message_id}` guards against a replay that starts a second bump.
 *
 * Whether the message is an auto-reply, an opt-out or a reply is messaging's verdict on the event
 * (`auto_reply`, `opt_out`, `judgement_certain`: libs/text `judgeInbound`, which saw the email's
 * headers, read with the grant of the mailbox it arrived on): the interrupt never judges again, so
 * it cannot disagree with messaging and followups.
 *
 * In order: correlate (email: the enrollment's Outreach threads only) → not live: stored only → a
 * saved decision for the event id: nothing → an auto-reply: stored only, except that a stated return
 * date moves the next check past it (`AutoReplyResumeService`) → an opt-out: the opt-out
 * (no agent) → a prospect's first real reply: promoted to a CRM person (best effort; not on a
 * verdict made without the headers) → the compare-and-set bump (3 tries) and the
 * invalidation of pending and approved actions → `outreach.decision.requested` reason
 * `reply_received`, ref the message id, id `reply:{message_id}`, when the campaign is active and
 * outreach is not stopped. All in the consumer's transaction: a failure retries the whole message.
 */
@Injectable()
export class ReplyInterruptService {
  private readonly results: Counter<'channel' | 'result'>;

  constructor(
    private readonly repo: InterruptsRepository,
    private readonly enrollments: EnrollmentsService,
    private readonly optOut: OptOutService,
    private readonly resume: AutoReplyResumeService,
    private readonly people: PeopleDirectory,
    private readonly rpc: RpcClient,
    metrics: Metrics,
    @Inject(APP_CONFIG) private readonly config: OutreachConfig,
    @Inject(LOGGER) private readonly logger: Logger,
  ) {
    this.results = new Counter({ name: `${METRIC_PREFIX}outreach_interrupts_total`, help: 'Inbound messages seen by the outreach reply interrupt, by channel and result', labelNames: ['channel', 'result'], registers: [metrics.registry] });
  }

  async handle(tx: Tx, organizationId: string, m: MessageReceivedData): Promise<InterruptResult> {
    const result = await this.decide(tx, organizationId, m);
    this.results.inc({ channel: m.channel, result });
    this.logger.info({ event: 'outreach.reply_interrupt', organization_id: organizationId, message_id: m.message_id, channel: m.channel, result }, 'inbound message seen by the reply interrupt');
    return result;
  }

  private async decide(tx: Tx, org: string, m: MessageReceivedData): Promise<InterruptResult> {
    const channel = m.channel as 'email' | 'linkedin';
    // The inbound's own id is never ours on email; on LinkedIn the receiver passes our ids of the chat.
    const ids = (channel === 'email' ? [m.in_reply_to, m.thread_id] : [m.in_reply_to, m.thread_id, m.external_id]).filter((v): v is string => typeof v === 'string' && v !== '');
    const threadId = m.thread_id || null;
    const c = await this.repo.correlate(tx, org, channel, ids, m.conversation_id ?? null, threadId);
    if (!c) return 'uncorrelated';
    if (channel === 'email' && threadId && !(await this.repo.learnThread(tx, org, threadId, c.action_id))) {
      this.logger.warn({ event: 'outreach.thread_not_learned', organization_id: org, message_id: m.message_id, action_id: c.action_id }, 'email thread not remembered; the interrupt goes on');
    }
    if (c.enrollment_status === 'ended') return 'not_live';
    const eventId = `reply:${m.message_id}`;
    if (await this.repo.decisionSaved(tx, c.enrollment_id, eventId)) return 'duplicate';
    if (m.auto_reply) {
      // Still no reply: a stated return date only moves the next check past the absence.
      if (channel === 'email') await this.resume.apply(tx, org, c.enrollment_id, c.person_id, m);
      return 'auto_reply';
    }
    if (m.opt_out) {
      const person = await this.people.person(org, c.person_id);
      const values: ChannelValue[] = [...(person ? channelValuesOf(person) : []), { channel, value: m.from }];
      await this.optOut.apply(tx, { organization_id: org, source: 'phrase', cause_id: m.message_id, values, person_ids: [c.person_id, m.contact_id] });
      return 'opt_out';
    }
    if (c.person_kind === 'prospect') {
      if (m.judgement_certain === false) this.logger.info({ event: 'outreach.promote_skipped', organization_id: org, enrollment_id: c.enrollment_id, message_id: m.message_id }, 'reply judged without its headers; the prospect is not promoted on it');
      else await this.promote(tx, org, c.enrollment_id, c.person_id);
    }
    const eventFollows = c.campaign_active && !c.outreach_stopped;
    const version = await this.enrollments.interrupt(tx, c.enrollment_id, eventFollows);
    if (version === null) return 'lost';
    if (!eventFollows) return 'held';
    await tx.publish(decisionRequested(org, eventId, { enrollment_id: c.enrollment_id, reason: 'reply_received', ref: m.message_id }));
    return 'interrupted';
  }

  /**
   * A prospect's first real reply makes them a CRM person (seed 003 §4.7: Outreach adds a person to
   * the CRM only on a real reply), best effort: messaging turns the contact into `crm`, and the
   * enrollment follows. A failure is logged and the reply goes on; the next reply tries again.
   */
  private async promote(tx: Tx, org: string, enrollmentId: string, contactId: string): Promise<void> {
    try {
      await this.rpc.call('messaging', MessagingRpc.ContactUpdate, { organization_id: org, contact_id: contactId, kind: 'crm' }, this.config.OUTREACH_CONTEXT_READ_TIMEOUT_MS);
    } catch (err) {
      this.logger.warn({ event: 'outreach.promote_failed', organization_id: org, enrollment_id: enrollmentId, contact_id: contactId, err: (err as Error).message }, 'prospect not promoted; the reply goes on');
      return;
    }
    // The contact keeps its id, so the CRM person is the same id; a duplicate live elsewhere loses to this reply.
    const ended = await this.enrollments.promote(tx, enrollmentId, contactId, 'reply');
    if (ended) this.logger.info({ event: 'outreach.enrollment_duplicate', organization_id: org, enrollment_id: ended, kept_enrollment_id: enrollmentId }, 'promotion ended a duplicate live enrollment of the person');
    this.logger.info({ event: 'outreach.prospect_promoted', organization_id: org, enrollment_id: enrollmentId, contact_id: contactId }, 'prospect promoted to a CRM person on a first real reply');
  }
}
