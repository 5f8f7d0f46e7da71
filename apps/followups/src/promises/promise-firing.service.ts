import { Inject, Injectable } from '@nestjs/common';
import { AI_DEFAULT_OUTPUT_SCHEMAS, AiClient, type FlowTemplateRef, MessagingCommands, MessagingRpc, type MessagingSendData, type NotificationCreateData, type NotificationView } from '@touchpoint/contracts';
import type { Tx } from '@touchpoint/database';
import type { Logger } from '@touchpoint/observability';
import { APP_CONFIG, LOGGER, RpcClient, UnitOfWork } from '@touchpoint/runtime';
import { truncateText } from '@touchpoint/text';
import { Clock, insideServiceWindow } from '@touchpoint/time';
import { ContactsRepository } from '../contacts/contacts.repository.js';
import type { FollowupsConfig } from '../followups.config.js';
import { FollowupsMetrics } from '../metrics/followups.metrics.js';
import { poolOf } from '@touchpoint/database';
import { SendersRepository } from '../senders/senders.repository.js';
import { SettingsService } from '../settings/settings.service.js';
import { type PromiseRow, promiseSendKeyOf } from './promise-row.js';
import { PromisesRepository } from './promises.repository.js';

/** A template return with no usable number is retried this much later, ms (seed 000 "retry 15 s"). */
export const PROMISE_SENDER_RETRY_MS = 15_000;
/** A team alert messaging could not take is tried again this much later, ms. */
export const PROMISE_ALERT_RETRY_MS = 30_000;
/** Tries of a team alert before the return is marked failed. */
export const PROMISE_ALERT_MAX_ATTEMPTS = 5;

/** What one `fireOne` did. */
export type PromiseFireOutcome = 'idle' | 'resumed' | 'template' | 'alerted' | 'skipped' | 'cancelled' | 'failed' | 'dropped' | 'waiting';

/**
 * Fires due one-off returns (seed 002 "Retornos avulsos"; the requests are `PromisesService`): at
 * the due time inside the 24-hour window the conversation is resumed with a message ai-gateway
 * writes (`promise_resume`); outside it, `outside_window` decides — `alert` notifies the team
 * through messaging, `template` sends an approved template.
 *
 * The model is called with no lock held (seed 000 "AI step"): the claim takes a lease
 * (`locked_until`) and bumps `attempts`, commits, calls, then writes under the lock only if
 * `attempts` is unchanged — a worker that died mid-call leaves a lease that expires, and its late
 * answer is dropped.
 */
@Injectable()
export class PromiseFiringService {
  private readonly ai: AiClient;

  constructor(
    private readonly uow: UnitOfWork,
    private readonly promises: PromisesRepository,
    private readonly contacts: ContactsRepository,
    private readonly senders: SendersRepository,
    private readonly settings: SettingsService,
    private readonly metrics: FollowupsMetrics,
    private readonly rpc: RpcClient,
    private readonly clock: Clock,
    @Inject(APP_CONFIG) private readonly config: FollowupsConfig,
    @Inject(LOGGER) private readonly logger: Logger,
  ) {
    this.ai = new AiClient(rpc);
  }

  /**
   * Fires at most one due return. Inside the 24-hour window: lease + fence, model call without a
   * lock, then the message (or `skipped` when the model failed). Outside: `alert` or `template`.
   */
  async fireOne(): Promise<PromiseFireOutcome> {
    const now = this.clock.now();
    const claimed = await this.uow.run(async (tx): Promise<{ outcome: PromiseFireOutcome; resume?: PromiseRow }> => {
      const row = await this.promises.claimDue(tx, now);
      if (!row) return { outcome: 'idle' };
      // The organization lost the follow-ups entitlement since the return was scheduled: it is not
      // sent (reason `plan_lost`, like the release loop's enrollments). Read on this transaction's
      // connection (see SettingsService.get).
      const organization = await this.settings.get(row.organization_id, tx);
      if (!organization.followups_enabled) {
        await this.promises.update(tx, row.id, { status: 'cancelled', cancel_reason: 'plan_lost', locked_until: null }, now);
        return { outcome: 'cancelled' };
      }
      const contact = await this.contacts.find(tx, row.organization_id, row.contact_id);
      if (contact?.erased_at || contact?.opted_out_at) {
        await this.promises.update(tx, row.id, { status: 'skipped', fired_at: row.fired_at ?? now, locked_until: null, run: { ai_run_id: null, message_key: null, skip_reason: contact.erased_at ? 'contact_erased' : 'opted_out', usage: null } }, now);
        return { outcome: 'skipped' };
      }
      const inside = insideServiceWindow(contact?.last_inbound_at, now);
      if (row.status === 'turn_enqueued' || (row.status === 'scheduled' && inside)) {
        const leased = await this.promises.update(tx, row.id, { status: 'turn_enqueued', attempts: row.attempts + 1, locked_until: new Date(now.getTime() + this.config.FOLLOWUP_AI_LEASE_MS), fired_at: row.fired_at ?? now }, now);
        return { outcome: 'resumed', resume: leased! };
      }
      if (row.outside_window === 'alert') return { outcome: await this.alert(tx, row, now) };
      return { outcome: await this.sendTemplate(tx, row, now) };
    });
    if (!claimed.resume) {
      if (claimed.outcome !== 'idle') this.metrics.promises.inc({ outcome: claimed.outcome });
      return claimed.outcome;
    }
    const outcome = await this.resume(claimed.resume);
    this.metrics.promises.inc({ outcome });
    return outcome;
  }

  /** The model call (no lock held), then the fenced second pass. */
  private async resume(row: PromiseRow): Promise<PromiseFireOutcome> {
    const contact = await this.contacts.find(poolOf(this.uow.dataSource), row.organization_id, row.contact_id);
    const result = await this.ai.run({
      organization_id: row.organization_id,
      kind: 'promise_resume',
      // One key per attempt: a new fence asks the model again rather than reading a dead worker's answer.
      idempotency_key: `promise:${row.id}:${row.attempts}`,
      input: { promise: row.promise, reason: row.reason, promised_at: row.promised_at.toISOString(), ...(contact?.name ? { contact: { name: contact.name } } : {}) },
      output_schema: AI_DEFAULT_OUTPUT_SCHEMAS.promise_resume,
      timeout_ms: this.config.FOLLOWUP_AI_TIMEOUT_MS,
    });
    this.metrics.aiRequests.inc({ kind: 'promise_resume', status: result.status });
    const now = this.clock.now();
    return this.uow.run(async (tx) => {
      const current = await this.promises.find(tx, row.organization_id, row.id, true);
      // Fenced: another worker took over (a new attempt), or the return was cancelled meanwhile.
      if (!current || current.attempts !== row.attempts || current.status !== 'turn_enqueued') {
        this.logger.info({ event: 'followups.promise_late_answer_dropped', promise_id: row.id, attempts: row.attempts }, 'late model answer dropped');
        return 'dropped' as const;
      }
      const fresh = await this.contacts.find(tx, row.organization_id, row.contact_id);
      const usage = (result.usage as unknown as Record<string, unknown>) ?? null;
      if (fresh?.opted_out_at || fresh?.erased_at) {
        await this.promises.update(tx, row.id, { status: 'skipped', locked_until: null, run: { ai_run_id: result.run_id, message_key: null, skip_reason: 'opted_out', usage } }, now);
        return 'skipped' as const;
      }
      const body = result.status === 'ok' ? String((result.output as { body?: unknown })?.body ?? '').trim() : '';
      if (!body) {
        await this.promises.update(tx, row.id, { status: 'skipped', locked_until: null, last_error: result.reason ?? null, run: { ai_run_id: result.run_id, message_key: null, skip_reason: `ai_${result.status === 'ok' ? 'empty' : result.status}`, usage } }, now);
        return 'skipped' as const;
      }
      const key = promiseSendKeyOf(row.id);
      const sender = await this.senders.connectedFallback(tx, row.organization_id, 'whatsapp');
      await tx.publish([this.sendCommand(row, key, { text: body }, sender?.sender_id)]);
      await this.promises.update(tx, row.id, { status: 'completed', locked_until: null, run: { ai_run_id: result.run_id, message_key: key, skip_reason: null, usage } }, now);
      return 'resumed' as const;
    });
  }

  /** Outside the window with `alert`: the team is notified through messaging (idempotent by key). */
  private async alert(tx: Tx, row: PromiseRow, now: Date): Promise<PromiseFireOutcome> {
    const notification: NotificationCreateData = {
      organization_id: row.organization_id,
      contact_id: row.contact_id,
      title: 'Retorno fora da janela de 24 horas',
      body: `${row.promise} — ${row.reason}`,
      channels: ['in_app'],
      priority: 'high',
      idempotency_key: `promise-alert:${row.id}`,
      data: { kind: 'followup_promise_due', promise_id: row.id, conversation_id: row.conversation_id ?? '' },
    };
    let view: NotificationView;
    try {
      view = await this.rpc.call('messaging', MessagingRpc.NotificationCreate, notification, this.config.FOLLOWUP_ACTION_RPC_TIMEOUT_MS);
    } catch (err) {
      // Messaging down or refusing: try again later (the key makes a repeat one notification), fail after a few tries.
      const attempts = row.attempts + 1;
      const message = err instanceof Error ? err.message : String(err);
      if (attempts >= PROMISE_ALERT_MAX_ATTEMPTS) {
        await this.promises.update(tx, row.id, { status: 'failed', attempts, fired_at: row.fired_at ?? now, last_error: truncateText(`alert: ${message}`, 1000) }, now);
        return 'failed';
      }
      await this.promises.update(tx, row.id, { attempts, due_at: new Date(now.getTime() + PROMISE_ALERT_RETRY_MS), last_error: truncateText(`alert: ${message}`, 1000) }, now);
      return 'waiting';
    }
    const notificationId = view.id;
    await this.promises.update(tx, row.id, { status: 'alerted', fired_at: row.fired_at ?? now, alert: { notification_id: notificationId, notified_at: now.toISOString() } }, now);
    return 'alerted';
  }

  /** Outside the window with `template`: an approved template through messaging's send path. */
  private async sendTemplate(tx: Tx, row: PromiseRow, now: Date): Promise<PromiseFireOutcome> {
    const organization = await this.settings.get(row.organization_id);
    const approved = organization.approved_templates[0];
    const template: FlowTemplateRef | null = row.template ?? (approved ? { name: approved.name, language: approved.language, parameters: [] } : null);
    if (!template) {
      await this.promises.update(tx, row.id, { status: 'failed', fired_at: row.fired_at ?? now, last_error: 'no_approved_template' }, now);
      return 'failed';
    }
    const sender = await this.senders.connectedFallback(tx, row.organization_id, 'whatsapp');
    if (!sender) {
      await this.promises.update(tx, row.id, { status: 'template_pending', fired_at: row.fired_at ?? now, due_at: new Date(now.getTime() + PROMISE_SENDER_RETRY_MS), last_error: 'sender_unavailable' }, now);
      return 'waiting';
    }
    const key = promiseSendKeyOf(row.id);
    const parameters = template.parameters ?? [];
    await tx.publish([this.sendCommand(row, key, { template: { name: template.name, language: template.language, components: parameters.length ? [{ type: 'body', parameters: parameters.map((t) => ({ type: 'text', text: t })) }] : [] } }, sender.sender_id)]);
    await this.promises.update(tx, row.id, { status: 'template_dispatching', fired_at: row.fired_at ?? now, last_error: null, run: { ai_run_id: null, message_key: key, skip_reason: null, usage: null } }, now);
    return 'template';
  }

  private sendCommand(row: PromiseRow, key: string, content: Pick<MessagingSendData, 'text' | 'template'>, senderId: string | undefined) {
    const command: MessagingSendData = {
      organization_id: row.organization_id,
      idempotency_key: key,
      channel: 'whatsapp',
      contact_id: row.contact_id,
      ...(row.conversation_id ? { conversation_id: row.conversation_id } : {}),
      sender_type: 'followup',
      ...(row.agent_id ? { sender_id: row.agent_id } : {}),
      ...(senderId ? { outbox_sender_id: senderId } : {}),
      requester: 'followups',
      ...content,
      context: { followup_promise_id: row.id },
    };
    return { event_id: key, type: MessagingCommands.Send, organization_id: row.organization_id, data: command };
  }
}
