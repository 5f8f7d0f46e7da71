import { Inject, Injectable } from '@nestjs/common';
import { Counter } from 'prom-client';
import { AI_DEFAULT_OUTPUT_SCHEMAS, AiClient, type AiRunResult, type DecisionReason, type DecisionRequestedData, type OutboundActionType, type OutreachDraftEmailInput, type OutreachDraftLinkedinInput } from '@touchpoint/contracts';
import type { Tx } from '@touchpoint/database';
import { type Logger, METRIC_PREFIX, Metrics } from '@touchpoint/observability';
import { APP_CONFIG, LOGGER, RpcClient, UnitOfWork } from '@touchpoint/runtime';
import { truncateText } from '@touchpoint/text';
import { Clock } from '@touchpoint/time';
import { type CampaignRow, CampaignsRepository } from '../campaigns/campaigns.repository.js';
import { type BuiltContext, ContextBuilder } from '../context/context-builder.js';
import { PeopleDirectory } from '../directory/people.directory.js';
import { PersonAddressesRepository } from '../directory/person-addresses.repository.js';
import { checkDraft } from '../drafting/draft-check.js';
import { DraftSaver } from '../drafting/draft-saver.js';
import { type EnrollmentRow, EnrollmentsRepository } from '../enrollments/enrollments.repository.js';
import type { OutreachConfig } from '../outreach.config.js';
import type { RunContext, RunHandler } from '../runners/run-context.js';
import type { RunRowOf } from '../runners/runs.repository.js';
import { addMs, RETRY_DECISION_AFTER_MS } from './next-check.js';
import { DecisionSaver, type DecisionResult, type SaveOutcome } from './decision-saver.js';
import { type DecisionRow, DecisionsRepository } from './decisions.repository.js';
import { postCheck } from './post-check.js';

/** The gate's answer, saved as the first step's memo: it pins the version the decision is made on. */
type Gate =
  | { go: false; why: string }
  | {
      go: true;
      version: number;
      enrollment: Pick<EnrollmentRow, 'id' | 'organization_id' | 'campaign_id' | 'person_kind' | 'person_id' | 'touch_count' | 'context_version'>;
      campaign: CampaignRow;
      /** No decision was ever made for the enrollment (seed 003 §4.7: a due row a pause kept from its enrolled run). */
      first_touch?: boolean;
    };

const OUTBOUND = new Set<string>(['email', 'linkedin_connection', 'linkedin_message']);

/**
 * The decision runner (seed 003 §4.3–§4.4, DESIGN §6): one run per `outreach.decision.requested`,
 * in steps whose outputs are memoised so a retry reuses them:
 * 1 gate — skip (no write) when the enrollment is not active, the campaign not active, outreach
 *   stopped, or a decision is already saved for this event; then the person read: gone → ended
 *   `person_removed`; touch_count ≥ max_touches → ended `max_touches`; no model call in any of these;
 * 2 context — the builder; no outbound action possible (and no invitation waiting) →
 *   `needs_contact_data`, no model call;
 * 3 decide — `ai.run` kind outreach_decide, keyed by the event id;
 * 4 save — the post-check, the decision row and the compare-and-set enrollment write;
 * 5 draft — for email and linkedin_*: `ai.run` of the specialist (key `draft:{decision_id}`), the
 *   draft check, and the three-write draft save.
 * Runs are limited per organization by the runner's concurrency key.
 */
@Injectable()
export class DecisionRunner implements RunHandler<'decision'> {
  private readonly ai: AiClient;
  private readonly outcomes: Counter<'outcome'>;

  constructor(
    private readonly uow: UnitOfWork,
    private readonly enrollments: EnrollmentsRepository,
    private readonly campaigns: CampaignsRepository,
    private readonly decisions: DecisionsRepository,
    private readonly saver: DecisionSaver,
    private readonly drafts: DraftSaver,
    private readonly builder: ContextBuilder,
    private readonly people: PeopleDirectory,
    private readonly addresses: PersonAddressesRepository,
    private readonly clock: Clock,
    rpc: RpcClient,
    metrics: Metrics,
    @Inject(APP_CONFIG) private readonly config: OutreachConfig,
    @Inject(LOGGER) private readonly logger: Logger,
  ) {
    this.ai = new AiClient(rpc);
    this.outcomes = new Counter({
      name: `${METRIC_PREFIX}outreach_decisions_total`,
      help: 'Outreach decision runs by outcome (skipped, ended, needs_contact_data, saved, invalid, error, discarded, drafted)',
      labelNames: ['outcome'],
      registers: [metrics.registry],
    });
  }

  async execute(ctx: RunContext<'decision'>): Promise<void> {
    const input = ctx.run.input;
    const eventId = ctx.key;
    const log = { organization_id: ctx.run.organization_id, enrollment_id: input.enrollment_id, event_id: eventId, reason: input.reason };

    const gate = await ctx.step('gate', () => this.gate(input.enrollment_id, eventId));
    if (!gate.go) {
      this.outcomes.inc({ outcome: 'skipped' });
      this.logger.info({ event: 'outreach.decision_skipped', ...log, why: gate.why }, 'decision skipped');
      return;
    }
    const { version, enrollment, campaign } = gate;
    // A followup_due with no earlier decision is the enrolled run a pause skipped: it runs as
    // followup_due, with the first-touch objective (seed 003 §4.7).
    const firstTouch = input.reason === 'enrolled' || (input.reason === 'followup_due' && gate.first_touch === true);

    const contact = await ctx.step('person', () => this.people.person(enrollment.organization_id, enrollment.person_id));
    const ended = await ctx.stepTx('precheck', async (tx) => {
      const now = this.clock.now();
      // The fresh read keeps the opt-out match's copy of the person's addresses current.
      if (contact) await this.addresses.upsert(tx, enrollment.organization_id, contact, now);
      const reason = contact === null ? 'person_removed' : enrollment.touch_count >= campaign.max_touches ? 'max_touches' : null;
      if (!reason) return null;
      await this.enrollments.compareAndSet(tx, enrollment.id, version, { status: 'ended', ended_reason: reason, ended_at: now, next_check_at: null }, now, { onlyStatus: ['active'] });
      return reason;
    });
    if (ended) {
      this.outcomes.inc({ outcome: 'ended' });
      this.logger.info({ event: 'outreach.enrollment_ended', ...log, ended_reason: ended }, 'enrollment ended before any model call');
      return;
    }

    const context = await ctx.step('context', () => this.builder.build(enrollment as EnrollmentRow, campaign, contact!));
    if (context.needs_contact_data) {
      await ctx.stepTx('needs-contact-data', (tx) => this.enrollments.compareAndSet(tx, enrollment.id, version, { status: 'needs_contact_data', next_check_at: null }, this.clock.now(), { onlyStatus: ['active'] }).then(() => true));
      this.outcomes.inc({ outcome: 'needs_contact_data' });
      this.logger.info({ event: 'outreach.needs_contact_data', ...log }, 'no reachable channel');
      return;
    }

    const decided = await ctx.step('decide', () =>
      this.ai.run({
        organization_id: enrollment.organization_id,
        kind: 'outreach_decide',
        idempotency_key: eventId,
        input: { context: context.sections, trigger: { reason: input.reason, ...(input.ref ? { ref: input.ref } : {}), ...(firstTouch ? { first_touch: true } : {}) }, allowed_actions: context.allowed_actions },
        output_schema: AI_DEFAULT_OUTPUT_SCHEMAS.outreach_decide,
        timeout_ms: this.config.OUTREACH_AI_TIMEOUT_MS,
      }),
    );

    const saved = await ctx.stepTx('save', (tx) => this.save(tx, input, eventId, version, enrollment.id, enrollment.organization_id, campaign, context, decided));
    this.outcomes.inc({ outcome: saved.effect === 'discarded' ? 'discarded' : saved.decision.outcome });
    this.logger.info({ event: 'outreach.decision_saved', ...log, decision_id: saved.decision.id, outcome: saved.decision.outcome, effect: saved.effect, type: saved.decision.type }, 'decision saved');
    if (saved.effect !== 'applied' || saved.decision.outcome !== 'saved' || !OUTBOUND.has(saved.decision.type ?? '')) return;

    await this.draft(ctx, saved.decision, campaign, context, log);
  }

  /** Step 5: the specialist, the draft check and the draft save. */
  private async draft(ctx: RunContext, decision: DecisionRow, campaign: CampaignRow, context: BuiltContext, log: Record<string, unknown>): Promise<void> {
    const type = decision.type as OutboundActionType;
    const isReply = type === 'email' && decision.reply_to_message_id !== null;
    const input: OutreachDraftEmailInput | OutreachDraftLinkedinInput = type === 'email' ? { context: context.sections, objective: decision.objective!, is_reply: isReply } : { context: context.sections, type, objective: decision.objective! };
    const written = await ctx.step('draft', () =>
      this.ai.run({
        organization_id: decision.organization_id,
        kind: type === 'email' ? 'outreach_draft_email' : 'outreach_draft_linkedin',
        idempotency_key: `draft:${decision.id}`,
        input: input as never,
        output_schema: AI_DEFAULT_OUTPUT_SCHEMAS[type === 'email' ? 'outreach_draft_email' : 'outreach_draft_linkedin'],
        timeout_ms: this.config.OUTREACH_AI_TIMEOUT_MS,
      }),
    );
    if (written.status !== 'ok') {
      const outcome = written.status === 'invalid_output' ? 'invalid' : 'error';
      const effect = await ctx.stepTx('draft-failed', (tx) => this.saver.draftFailed(tx, decision, outcome, `writer_${written.status}`, this.clock.now()));
      this.outcomes.inc({ outcome: effect === 'applied' ? 'error' : 'discarded' });
      this.logger.warn({ event: 'outreach.draft_failed', ...log, decision_id: decision.id, status: written.status, effect }, 'the writer run failed');
      return;
    }
    const checked = checkDraft(type, isReply, written.output);
    if (!checked.ok) {
      const effect = await ctx.stepTx('draft-invalid', (tx) => this.saver.draftFailed(tx, decision, 'invalid', checked.code, this.clock.now()));
      this.outcomes.inc({ outcome: effect === 'applied' ? 'invalid' : 'discarded' });
      this.logger.info({ event: 'outreach.draft_invalid', ...log, decision_id: decision.id, code: checked.code, effect }, 'the draft failed the check');
      return;
    }
    const result = await ctx.step('draft-save', () =>
      this.drafts.save({
        organization_id: decision.organization_id,
        enrollment_id: decision.enrollment_id,
        campaign_id: campaign.id,
        decision_id: decision.id,
        version: decision.context_version + 1,
        type,
        draft: checked.draft,
        run_id: written.run_id,
      }),
    );
    this.outcomes.inc({ outcome: result.outcome === 'pending' ? 'drafted' : 'discarded' });
    this.logger.info({ event: 'outreach.draft_saved', ...log, decision_id: decision.id, action_id: result.action_id, outcome: result.outcome }, 'draft saved for review');
  }

  /** Step 1: the skips, read fresh. */
  private gate(enrollmentId: string, eventId: string): Promise<Gate> {
    return this.uow.run(async (tx) => {
      const enrollment = await this.enrollments.findById(tx, enrollmentId);
      if (!enrollment) return { go: false, why: 'enrollment_missing' };
      if (enrollment.status !== 'active') return { go: false, why: `enrollment_${enrollment.status}` };
      const campaign = await this.campaigns.find(tx, enrollment.organization_id, enrollment.campaign_id);
      if (!campaign || campaign.status !== 'active') return { go: false, why: `campaign_${campaign?.status ?? 'missing'}` };
      if ((await this.campaigns.settings(tx, enrollment.organization_id)).outreach_stopped_at) return { go: false, why: 'outreach_stopped' };
      if (await this.decisions.findByTrigger(tx, enrollment.id, eventId)) return { go: false, why: 'already_decided' };
      const { id, organization_id, campaign_id, person_kind, person_id, touch_count, context_version } = enrollment;
      const first_touch = (await this.decisions.ofEnrollment(tx, enrollment.id, 1)).length === 0;
      return { go: true, version: context_version, enrollment: { id, organization_id, campaign_id, person_kind, person_id, touch_count, context_version }, campaign, first_touch };
    });
  }

  /** Step 4: the post-check (policy beats the model) and the save. */
  private save(tx: Tx, input: DecisionRequestedData, eventId: string, version: number, enrollmentId: string, organizationId: string, campaign: CampaignRow, context: BuiltContext, decided: AiRunResult): Promise<SaveOutcome> {
    let result: DecisionResult;
    // A model that answered, but not with the JSON asked for, is a bad answer (invalid); an outage,
    // a timeout or a spent budget is a failed run (error, never counted toward stalled).
    if (decided.status === 'invalid_output') result = { kind: 'invalid', reason: 'ai_invalid_output' };
    else if (decided.status !== 'ok') result = { kind: 'error', reason: `ai_${decided.status}` };
    else {
      const checked = postCheck(decided.output, context.allowed_actions, campaign);
      result = checked.ok ? { kind: 'action', action: checked.action } : { kind: 'invalid', reason: checked.reason };
    }
    return this.saver.save(tx, {
      organization_id: organizationId,
      enrollment_id: enrollmentId,
      trigger_event_id: eventId,
      trigger_reason: input.reason as DecisionReason,
      trigger_ref: input.ref ?? null,
      version,
      result,
      reply_to: context.reply_to,
      run_id: decided.run_id,
      raw_output: decided.output,
      now: this.clock.now(),
    });
  }

  /**
   * The run failed for good (seed 003 §4.3 on_failure): a decision `error` and the next check in
   * one day, so no row stays due and none waits forever with no draft. Conditional writes only.
   */
  async onFailure(run: RunRowOf<'decision'>, error: string): Promise<void> {
    const input = run.input;
    const now = this.clock.now();
    await this.uow.run(async (tx) => {
      const enrollment = await this.enrollments.findById(tx, input.enrollment_id);
      if (!enrollment || enrollment.status !== 'active') return;
      const existing = await this.decisions.findByTrigger(tx, enrollment.id, run.run_key);
      if (existing) {
        // Saved, then the draft failed for good: the enrollment waits with no next check and no draft.
        if (existing.outcome === 'saved' && OUTBOUND.has(existing.type ?? '')) await this.saver.draftFailed(tx, existing, 'error', 'runner_failed', now);
        return;
      }
      const { row } = await this.decisions.insert(tx, {
        organization_id: enrollment.organization_id,
        enrollment_id: enrollment.id,
        trigger_event_id: run.run_key,
        trigger_reason: input.reason,
        trigger_ref: input.ref ?? null,
        context_version: enrollment.context_version,
        outcome: 'error',
        type: null,
        rationale: null,
        objective: null,
        goal_met: false,
        followup_days: null,
        failure_reason: `runner_failed: ${truncateText(error, 200)}`,
        reply_to_message_id: null,
        reply_to_text: null,
        run_id: null,
        raw_output: null,
        now,
      });
      const moved = await this.enrollments.compareAndSet(tx, enrollment.id, enrollment.context_version, { next_check_at: addMs(now, RETRY_DECISION_AFTER_MS) }, now, { onlyStatus: ['active'] });
      if (!moved) await this.decisions.setOutcome(tx, row.id, 'discarded', null, now);
    });
    this.outcomes.inc({ outcome: 'error' });
  }
}
