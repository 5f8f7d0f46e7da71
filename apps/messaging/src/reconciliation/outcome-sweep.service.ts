import { Inject, Injectable, type OnApplicationBootstrap, type OnModuleDestroy } from '@nestjs/common';
import { Counter } from 'prom-client';
import { OUTBOX_ENTRIES_BY_KEY_MAX, type OutboxEntryEventData, type OutboxEntryView, OutboxRpc } from '@touchpoint/contracts';
import { type Logger, METRIC_PREFIX, Metrics, zeroCounter } from '@touchpoint/observability';
import { APP_CONFIG, IntervalTask, LOGGER, RpcClient, UnitOfWork } from '@touchpoint/runtime';
import { Clock } from '@touchpoint/time';
import { MessagesRepository } from '../messages/messages.repository.js';
import type { MessagingConfig } from '../messaging.config.js';
import { OutcomesService } from '../sending/outcomes.service.js';
import { type AwaitingMessage, OutcomeSweepRepository } from './outcome-sweep.repository.js';

/** The outcome sweep's steps, in order. */
export const OUTCOME_SWEEP_STEPS = ['persist', 'deliveries', 'prune'] as const;
export type OutcomeSweepStep = (typeof OUTCOME_SWEEP_STEPS)[number];

/** What each step of one pass did: its counts, or the error it threw. */
export type OutcomeSweepReport = Record<OutcomeSweepStep, { ok: true; result: Record<string, number> } | { ok: false; error: string }>;

/** Kept statuses deleted per statement, and statements per pass (a storm is drained over a few passes). */
const PRUNE_BATCH = 5000;
const PRUNE_ROUNDS = 20;

/** Entry statuses that are an outcome messaging must reflect (pending and sending are not yet). */
const SETTLED = new Set(['accepted', 'failed', 'cancelled', 'ambiguous']);

/**
 * Messaging's share of the every-minute recovery work (seed 004 "Dispatch is woken …, drained by
 * cron"). The dispatcher reports each outcome once, by event; when that event never moves its
 * message (dead-lettered, lost with a replica), this pass repairs what no single event can:
 *
 * - `persist`: outbound messages still `queued`/`ambiguous` after OUTBOX_PERSISTENCE_GRACE_MS are
 *   looked up at the dispatcher (`outbox.entries.by_key`) and a settled entry is applied exactly as
 *   its event would have been (same forward-only moves, same event ids, so a late event is a no-op);
 * - `deliveries`: notification deliveries left `pending` behind a settled message are settled from it;
 * - `prune`: provider statuses that matched no message within PENDING_STATUS_TTL_MS are deleted.
 *
 * Each step is isolated: one that throws never costs the others their run. Safe in many replicas
 * (SKIP LOCKED claims, conditional writes).
 */
@Injectable()
export class OutcomeSweepService implements OnApplicationBootstrap, OnModuleDestroy {
  private running?: Promise<OutcomeSweepReport>;
  private readonly task: IntervalTask;
  private readonly steps: Counter<'step' | 'result'>;
  private readonly repairs: Counter<'kind'>;

  constructor(
    private readonly uow: UnitOfWork,
    private readonly repository: OutcomeSweepRepository,
    private readonly messages: MessagesRepository,
    private readonly outcomes: OutcomesService,
    private readonly rpc: RpcClient,
    private readonly clock: Clock,
    metrics: Metrics,
    @Inject(APP_CONFIG) private readonly config: MessagingConfig,
    @Inject(LOGGER) private readonly logger: Logger,
  ) {
    this.steps = new Counter({ name: `${METRIC_PREFIX}messaging_outcome_sweep_steps_total`, help: 'Outcome sweep steps run, by step and result (ok, error)', labelNames: ['step', 'result'], registers: [metrics.registry] });
    this.repairs = new Counter({
      name: `${METRIC_PREFIX}messaging_outcome_repairs_total`,
      help: 'Rows the outcome sweep repaired: outcomes applied from the dispatcher, deliveries settled, unmatched statuses pruned',
      labelNames: ['kind'],
      registers: [metrics.registry],
    });
    zeroCounter(this.steps, { step: OUTCOME_SWEEP_STEPS, result: ['ok', 'error'] });
    zeroCounter(this.repairs, { kind: ['outcome_applied', 'delivery_settled', 'status_pruned'] });
    // Each step logs its own failure (runSteps); what reaches onError is a bug in the sweep itself.
    this.task = new IntervalTask({
      everyMs: config.OUTCOME_SWEEP_INTERVAL_MS,
      run: () => this.sweep(),
      onError: (err) => this.logger.error({ event: 'messaging.outcome_sweep_failed', err: err.message }, 'outcome sweep failed'),
    });
  }

  onApplicationBootstrap(): void {
    this.task.start();
  }

  async onModuleDestroy(): Promise<void> {
    await this.task.stop();
    // A pass a test started outside the schedule.
    await this.running?.catch(() => undefined);
  }

  /** Runs one pass (overlapping calls share the pass in progress). */
  sweep(): Promise<OutcomeSweepReport> {
    this.running ??= this.runSteps().finally(() => (this.running = undefined));
    return this.running;
  }

  private async runSteps(): Promise<OutcomeSweepReport> {
    const report = {} as OutcomeSweepReport;
    for (const step of OUTCOME_SWEEP_STEPS) {
      try {
        report[step] = { ok: true, result: await this.runStep(step) };
        this.steps.inc({ step, result: 'ok' });
      } catch (err) {
        report[step] = { ok: false, error: (err as Error)?.message ?? String(err) };
        this.steps.inc({ step, result: 'error' });
        this.logger.error({ event: 'messaging.outcome_sweep_step_failed', step, err: (err as Error)?.message }, 'outcome sweep step failed; the other steps still run');
      }
    }
    return report;
  }

  /** One step by name (public so a test can run or break a single step). */
  runStep(step: OutcomeSweepStep): Promise<Record<string, number>> {
    switch (step) {
      case 'persist':
        return this.persist();
      case 'deliveries':
        return this.deliveries();
      case 'prune':
        return this.prune();
    }
  }

  /** Asks the dispatcher about messages that waited past the grace and applies what it settled. */
  async persist(): Promise<{ asked: number; applied: number }> {
    const now = this.clock.now();
    const olderThan = new Date(now.getTime() - this.config.OUTBOX_PERSISTENCE_GRACE_MS);
    const awaiting = await this.uow.run((tx) => this.repository.claimAwaiting(tx, olderThan, now, this.config.OUTCOME_SWEEP_BATCH));
    const byOrganization = new Map<string, AwaitingMessage[]>();
    for (const m of awaiting) byOrganization.set(m.organization_id, [...(byOrganization.get(m.organization_id) ?? []), m]);
    let applied = 0;
    for (const [organizationId, group] of byOrganization) {
      for (let i = 0; i < group.length; i += OUTBOX_ENTRIES_BY_KEY_MAX) {
        const chunk = group.slice(i, i + OUTBOX_ENTRIES_BY_KEY_MAX);
        const { items } = await this.rpc.call('outbox-dispatcher', OutboxRpc.GetEntriesByKey, { organization_id: organizationId, idempotency_keys: chunk.map((m) => m.idempotency_key) });
        const waiting = new Map(chunk.map((m) => [m.idempotency_key, m]));
        for (const entry of items) {
          const message = waiting.get(entry.idempotency_key);
          if (!message || !SETTLED.has(entry.status) || (entry.status === 'ambiguous' && message.status === 'ambiguous')) continue;
          if (await this.apply(organizationId, message, entry)) applied++;
        }
      }
    }
    this.repairs.inc({ kind: 'outcome_applied' }, applied);
    return { asked: awaiting.length, applied };
  }

  /** Applies one settled entry to its message as its `outbox.entry.*` event would; true when the message moved. */
  private async apply(organizationId: string, message: AwaitingMessage, entry: OutboxEntryView): Promise<boolean> {
    const data = eventDataOf(entry);
    // The outcome lands on the message this pass claimed, whatever else the log context names.
    data.log_context = { ...data.log_context, message_id: message.id };
    const moved = await this.uow.run(async (tx) => {
      // The provider id's lock before the row lock, the order `OutcomesService` takes them in (no deadlock with a status).
      if (entry.status === 'accepted' && data.provider_message_id) await this.messages.lockProviderId(tx, organizationId, data.provider_message_id);
      const before = await this.messages.findById(tx, organizationId, message.id, true);
      if (!before || (before.status !== 'queued' && before.status !== 'ambiguous')) return false; // the event got there first
      if (entry.status === 'accepted') await this.outcomes.accepted(tx, organizationId, data);
      else if (entry.status === 'failed') await this.outcomes.failed(tx, organizationId, data);
      else if (entry.status === 'cancelled') await this.outcomes.cancelled(tx, organizationId, data);
      else await this.outcomes.ambiguous(tx, organizationId, data);
      const after = await this.messages.findById(tx, organizationId, message.id);
      return after?.status !== before.status;
    });
    if (moved) {
      this.logger.warn({ event: 'messaging.outcome_repaired', organization_id: organizationId, message_id: message.id, entry_id: entry.id, entry_status: entry.status }, 'applied an outbox outcome whose event never reached the message');
    }
    return moved;
  }

  /** Settles notification deliveries that stayed pending behind a settled message. */
  async deliveries(): Promise<{ settled: number }> {
    const olderThan = new Date(this.clock.now().getTime() - this.config.OUTBOX_PERSISTENCE_GRACE_MS);
    const stranded = await this.uow.run((tx) => this.repository.strandedDeliveries(tx, olderThan, this.config.OUTCOME_SWEEP_BATCH));
    let settled = 0;
    for (const d of stranded) {
      const done = await this.uow.run(async (tx) => {
        const message = await this.messages.findById(tx, d.organization_id, d.message_id, true);
        return message ? this.outcomes.settleDeliveryOf(tx, message) : false;
      });
      if (done) {
        settled++;
        this.logger.warn({ event: 'messaging.delivery_repaired', organization_id: d.organization_id, delivery_id: d.delivery_id, message_id: d.message_id }, 'settled a notification delivery its message had left pending');
      }
    }
    this.repairs.inc({ kind: 'delivery_settled' }, settled);
    return { settled };
  }

  /** Deletes statuses that matched no message within PENDING_STATUS_TTL_MS. */
  async prune(): Promise<{ pruned: number }> {
    const before = new Date(this.clock.now().getTime() - this.config.PENDING_STATUS_TTL_MS);
    let pruned = 0;
    for (let round = 0; round < PRUNE_ROUNDS; round++) {
      const n = await this.uow.run((tx) => this.repository.prunePendingStatuses(tx, before, PRUNE_BATCH));
      pruned += n;
      if (n < PRUNE_BATCH) break;
    }
    this.repairs.inc({ kind: 'status_pruned' }, pruned);
    if (pruned > 0) this.logger.info({ event: 'messaging.pending_statuses_pruned', pruned, ttl_ms: this.config.PENDING_STATUS_TTL_MS }, 'pruned provider statuses that never matched a message');
    return { pruned };
  }
}

/** The `outbox.entry.*` data the dispatcher would have published for an entry as it stands. */
function eventDataOf(entry: OutboxEntryView): OutboxEntryEventData {
  return {
    entry_id: entry.id,
    idempotency_key: entry.idempotency_key,
    channel: entry.channel,
    to: entry.to,
    sender_id: entry.sender_id,
    payload_type: entry.payload_type,
    provider_message_id: entry.provider_message_id,
    classification: entry.last_classification,
    error_code: entry.last_error_code,
    error_message: entry.last_error_message ?? null,
    attempts: entry.attempts,
    reason: entry.status === 'cancelled' ? (entry.last_classification === 'suppressed' ? 'suppressed' : 'requested') : undefined,
    log_context: { ...(entry.log_context ?? {}) },
  };
}
