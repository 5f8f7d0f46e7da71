import { Inject, Injectable } from '@nestjs/common';
import { Counter } from 'prom-client';
import { AiClient, type InstanceChangedData, type InstanceCloseReason, MessagingEvents } from '@touchpoint/contracts';
import type { Tx } from '@touchpoint/database';
import { AppError, ErrorCode } from '@touchpoint/errors';
import { type Logger, METRIC_PREFIX, Metrics } from '@touchpoint/observability';
import { APP_CONFIG, LOGGER, RpcClient, UnitOfWork } from '@touchpoint/runtime';
import { Clock } from '@touchpoint/time';
import type { MessagingConfig } from '../messaging.config.js';
import { RestrictionsRepository } from '../restrictions/restrictions.repository.js';
import { StreamRepository } from '../stream/stream.repository.js';
import { type ConversationRow, ConversationsRepository, type InstanceRow } from './conversations.repository.js';

/** An active instance idle this long or longer is closed by the sweep (seed 004 "Idle closing": 8 hours), ms. */
export const INSTANCE_IDLE_CLOSE_MS = 8 * 3600_000;
/** Instances closed or summarized per sweep step. */
export const SWEEP_BATCH = 200;
/** Most messages of an instance given to the summary prompt (the newest are dropped past it). */
export const SUMMARY_MAX_MESSAGES = 500;

/** What a rollover did (seed 004 "Message-count rollover"). */
export type RolloverOutcome = { outcome: 'rolled_over'; instance: InstanceRow; previous_instance_id: string } | { outcome: 'already_current'; instance: InstanceRow } | { outcome: 'refused'; reason: 'restricted' };

/**
 * Bounded instances (seed 004 "Instance Lifecycle"): the one active instance of a conversation,
 * the rollover at the message cap, the hourly idle close, and the summaries of closed instances.
 */
@Injectable()
export class InstancesService {
  private readonly closed: Counter<'reason'>;
  private readonly summaries: Counter<'outcome'>;
  private readonly ai: AiClient;

  constructor(
    private readonly uow: UnitOfWork,
    private readonly repository: ConversationsRepository,
    private readonly restrictions: RestrictionsRepository,
    private readonly stream: StreamRepository,
    private readonly clock: Clock,
    rpc: RpcClient,
    metrics: Metrics,
    @Inject(APP_CONFIG) private readonly config: MessagingConfig,
    @Inject(LOGGER) private readonly logger: Logger,
  ) {
    this.ai = new AiClient(rpc);
    this.closed = new Counter({ name: `${METRIC_PREFIX}messaging_instances_closed_total`, help: 'Conversation instances closed, by reason', labelNames: ['reason'], registers: [metrics.registry] });
    this.summaries = new Counter({ name: `${METRIC_PREFIX}messaging_summaries_total`, help: 'Instance summary attempts, by outcome', labelNames: ['outcome'], registers: [metrics.registry] });
  }

  /**
   * The active instance of a conversation the caller has LOCKED, opened when there is none (first
   * message, or the last one was closed by the idle sweep). The instance row is locked too, so the
   * idle sweep cannot close it under the message being added.
   * @param created the caller's transaction inserted the conversation (no instance can exist yet)
   */
  async activeInstanceLocked(tx: Tx, conversation: ConversationRow, now: Date, created = false): Promise<InstanceRow> {
    // A conversation this transaction just created has no instance to look for.
    const active = created ? null : await this.repository.findActiveInstance(tx, conversation.id, true);
    if (active) return active;
    const opened = await this.repository.openInstance(tx, conversation.organization_id, conversation.id, now);
    if (!opened) throw new AppError(ErrorCode.ServiceUnavailable, 'instance creation raced; retry');
    await this.announce(tx, conversation, opened, MessagingEvents.InstanceOpened, null, null);
    return opened;
  }

  /**
   * Closes the capped instance and opens its successor, in one transaction under the conversation
   * row lock, so concurrent inbound messages at the cap produce exactly one successor; the others
   * find the successor already current. Refused while the contact has an active abuse restriction.
   * @param cappedInstanceId the instance the caller saw at the cap
   */
  async rollover(organizationId: string, conversationId: string, cappedInstanceId: string): Promise<RolloverOutcome> {
    const result = await this.uow.run(async (tx): Promise<RolloverOutcome> => {
      const now = this.clock.now();
      const conversation = await this.repository.lockConversation(tx, conversationId);
      if (!conversation || conversation.organization_id !== organizationId) throw new AppError(ErrorCode.NotFound, 'conversation not found');
      if (await this.restrictions.findActive(tx, organizationId, conversation.contact_id, now)) return { outcome: 'refused', reason: 'restricted' };
      const active = await this.repository.findActiveInstance(tx, conversationId, true);
      if (active && active.id !== cappedInstanceId) return { outcome: 'already_current', instance: active };
      if (active) {
        const closed = await this.repository.closeInstance(tx, active.id, 'message_limit', now);
        if (closed) await this.announce(tx, conversation, closed, MessagingEvents.InstanceClosed, 'message_limit', null);
      }
      const successor = await this.repository.openInstance(tx, organizationId, conversationId, now);
      if (!successor) throw new AppError(ErrorCode.ServiceUnavailable, 'rollover raced; retry');
      await this.announce(tx, conversation, successor, MessagingEvents.InstanceOpened, null, active?.id ?? null);
      return { outcome: 'rolled_over', instance: successor, previous_instance_id: active?.id ?? cappedInstanceId };
    });
    if (result.outcome === 'rolled_over') {
      this.closed.inc({ reason: 'message_limit' });
      this.logger.info({ event: 'messaging.instance_rolled_over', organization_id: organizationId, conversation_id: conversationId, instance_id: result.instance.id, previous_instance_id: result.previous_instance_id }, 'instance rolled over at the message cap');
    }
    return result;
  }

  /**
   * One pass of the hourly sweep: closes idle instances (`time_limit`), then retries summaries of
   * closed instances. Returns what it did.
   */
  async sweep(): Promise<{ closed: number; summarized: number }> {
    const closed = await this.closeIdle(this.clock.now());
    const summarized = this.config.SUMMARIES === 'on' ? await this.summarizePending() : 0;
    return { closed, summarized };
  }

  /** Closes every active instance whose last activity is 8 h or more before `now`. */
  async closeIdle(now: Date): Promise<number> {
    const cutoff = new Date(now.getTime() - INSTANCE_IDLE_CLOSE_MS);
    let total = 0;
    for (;;) {
      const n = await this.uow.run(async (tx) => {
        const rows = await this.repository.closeIdle(tx, cutoff, now, SWEEP_BATCH);
        for (const row of rows) {
          await this.stream.append(tx, row.organization_id, MessagingEvents.InstanceClosed, instanceData(row, row.contact_id, 'time_limit', null));
        }
        return rows.length;
      });
      total += n;
      if (n < SWEEP_BATCH) break;
    }
    if (total > 0) {
      this.closed.inc({ reason: 'time_limit' }, total);
      this.logger.info({ event: 'messaging.instances_idle_closed', count: total }, 'idle instances closed');
    }
    return total;
  }

  /**
   * Summarizes closed instances through ai-gateway (`conversation_summary`). A failure leaves the
   * instance `closed` for the next sweep; with no model configured nothing else is affected.
   */
  async summarizePending(): Promise<number> {
    const pending = await this.uow.run((tx) => this.repository.findUnsummarized(tx, SWEEP_BATCH));
    let done = 0;
    for (const instance of pending) {
      const messages = await this.uow.run((tx) => this.repository.instanceMessages(tx, instance.id, SUMMARY_MAX_MESSAGES));
      const result = await this.ai.run({
        organization_id: instance.organization_id,
        kind: 'conversation_summary',
        // A new attempt needs a new key (ai.ts): the attempt number names it.
        idempotency_key: `summary:${instance.id}:${instance.summary_attempts}`,
        input: { messages: messages.filter((m) => m.body).map((m) => ({ at: new Date(m.created_at).toISOString(), direction: m.direction, channel: m.channel, text: m.body! })) },
        output_schema: { required: { summary: 'string' } },
        timeout_ms: this.config.SUMMARY_TIMEOUT_MS,
      });
      const summary = result.status === 'ok' ? (result.output as { summary?: unknown } | null)?.summary : undefined;
      if (typeof summary !== 'string' || summary.trim() === '') {
        await this.uow.run((tx) => this.repository.recordSummaryFailure(tx, instance.id, result.reason ?? result.status));
        this.summaries.inc({ outcome: result.status });
        // No model configured is the normal state of some installs: stop asking until the next sweep.
        if (result.status === 'unavailable') break;
        continue;
      }
      await this.uow.run(async (tx) => {
        const stored = await this.repository.saveSummary(tx, instance, summary, result.run_id, this.clock.now());
        if (stored) await this.stream.append(tx, instance.organization_id, MessagingEvents.InstanceSummarized, instanceData({ ...instance, status: 'summarized' }, instance.contact_id, instance.auto_closed_reason, null));
      });
      this.summaries.inc({ outcome: 'ok' });
      done++;
    }
    return done;
  }

  private async announce(tx: Tx, conversation: ConversationRow, instance: InstanceRow, type: string, reason: InstanceCloseReason | null, previous: string | null): Promise<void> {
    await this.stream.append(tx, conversation.organization_id, type, instanceData(instance, conversation.contact_id, reason, previous));
  }
}

/** The feed item (and event data) of an instance that opened, closed or was summarized; also used by the inbound receipt worker's batch. */
export function instanceData(instance: InstanceRow, contactId: string, reason: InstanceCloseReason | null, previous: string | null): InstanceChangedData {
  const data: InstanceChangedData = {
    instance_id: instance.id,
    conversation_id: instance.conversation_id,
    contact_id: contactId,
    status: instance.status,
    reason,
    previous_instance_id: previous,
    message_count: instance.message_count,
  };
  return data;
}
