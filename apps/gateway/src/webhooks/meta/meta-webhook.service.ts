import { Inject, Injectable } from '@nestjs/common';
import { MessagingWhatsAppRpc, OutboxRpc, type WhatsAppInboundBatch, type WhatsAppStatusBatch, type WhatsAppWebhookErrorBatch } from '@touchpoint/contracts';
import { GroupCommit } from '@touchpoint/database';
import { AppError, ErrorCode } from '@touchpoint/errors';
import type { Logger } from '@touchpoint/observability';
import { LOGGER, RpcClient } from '@touchpoint/runtime';

/** One `entry[].changes[]` of a Meta webhook. */
interface MetaChange {
  field?: string;
  value?: {
    metadata?: { phone_number_id?: string; display_phone_number?: string };
    statuses?: WhatsAppStatusBatch['statuses'];
    messages?: WhatsAppInboundBatch['messages'];
    contacts?: WhatsAppInboundBatch['contacts'];
    errors?: WhatsAppWebhookErrorBatch['errors'];
  };
}

/** The most statuses one hand-over to the dispatcher carries (a webhook with more goes whole, alone). */
const STATUS_HAND_OVER_MAX = 200;
/** The most inbound messages one hand-over to messaging carries (a webhook with more goes whole, alone). */
const INBOUND_HAND_OVER_MAX = 200;

/** An inbound message as handed over: with the `contacts` of the webhook change it came in. */
export interface InboundItem {
  message: WhatsAppInboundBatch['messages'][number];
  contacts: WhatsAppInboundBatch['contacts'];
}

/**
 * Cuts a group of inbound messages, in order, into hand-overs in which every sender (`wa_id`) has
 * one profile name: messaging reads a change's names by `wa_id`, and two grouped webhooks may name
 * the same sender differently (a name changed between them). Each message then keeps the name of
 * the webhook that carried it, as when every webhook went alone.
 */
export function inboundHandOvers(items: InboundItem[]): InboundItem[][] {
  const handOvers: InboundItem[][] = [];
  let current: InboundItem[] = [];
  let names = new Map<string, string | undefined>();
  for (const item of items) {
    const conflict = item.contacts.some((c) => names.has(c?.wa_id) && names.get(c?.wa_id) !== c?.profile?.name);
    if (conflict) {
      handOvers.push(current);
      current = [];
      names = new Map();
    }
    current.push(item);
    for (const c of item.contacts) names.set(c?.wa_id, c?.profile?.name);
  }
  if (current.length > 0) handOvers.push(current);
  return handOvers;
}

/**
 * Whether a failed hand-over may be one webhook's fault, so its group is handed over again webhook by
 * webhook: any answer of the dispatcher's but `service_unavailable` (no answer in time, or no
 * dispatcher). A dispatcher that does not answer fails the whole group at once; tried again one by one,
 * each webhook would wait out its own deadline, and the number's later webhooks behind them all.
 */
function notUnavailable(err: unknown): boolean {
  return !(err instanceof AppError && err.code === ErrorCode.ServiceUnavailable);
}

/** What one webhook delivery carried. */
export interface MetaDeliveryResult {
  statuses: number;
  messages: number;
  /** Webhook-level errors (`value.errors[]`), handed to the dispatcher. */
  errors: number;
  ignored: number;
}

/**
 * Hands a verified Meta webhook to the services that own its parts (DESIGN §1): delivery statuses
 * to the outbox-dispatcher (it stores them, settles ambiguous sends, and tells messaging through
 * `outbox.provider_status.recorded`), webhook-level `value.errors[]` to the dispatcher too (it
 * slows the number on a rate-limit error), inbound messages to messaging. Resolves only when every owner
 * confirmed durable storage; otherwise throws `service_unavailable` so Meta redelivers (both owners
 * deduplicate a redelivery).
 */
@Injectable()
export class MetaWebhookService {
  /**
   * The statuses of the webhooks of one business number that come in while its last hand-over to
   * the dispatcher is under way go in the next one together: one RPC for the group instead of one
   * per webhook (under load Meta sends one status per webhook, three per message sent). Each
   * webhook is still answered only once the dispatcher confirmed its statuses; a group the
   * dispatcher refuses is handed over again webhook by webhook (`GroupCommit`), so a status it
   * cannot store fails its own webhook only; a group the dispatcher did not answer fails at once. Keyed by the number and what the change said of it.
   */
  private readonly statusHandOver = new GroupCommit<WhatsAppStatusBatch['statuses'][number], true>(
    async (key, statuses) => {
      const [phoneNumberId, displayPhoneNumber, businessAccountId] = JSON.parse(key) as [string, string | null, string | null];
      const batch: WhatsAppStatusBatch = { phone_number_id: phoneNumberId, display_phone_number: displayPhoneNumber ?? undefined, business_account_id: businessAccountId ?? undefined, statuses };
      await this.rpc.call('outbox-dispatcher', OutboxRpc.WhatsAppStatuses, batch);
      return statuses.map(() => true as const);
    },
    STATUS_HAND_OVER_MAX,
    notUnavailable,
  );

  /**
   * The inbound messages of one business number's webhooks that come in while its last hand-over to
   * messaging is under way go in the next one together, as the statuses do: one RPC and one receipt
   * insert for the group. Each webhook is answered only once messaging stored its messages as
   * receipts; a refused group is handed over again webhook by webhook, a group messaging did not
   * answer fails at once (every webhook of it 503: Meta redelivers, messaging deduplicates).
   */
  private readonly inboundHandOver = new GroupCommit<InboundItem, true>(
    async (key, items) => {
      const [phoneNumberId, displayPhoneNumber, businessAccountId] = JSON.parse(key) as [string, string | null, string | null];
      // In order: messaging stores each hand-over's receipts after the previous one's.
      for (const handOver of inboundHandOvers(items)) {
        // Each webhook's contacts once (its messages share the array), in the webhooks' order.
        const contacts = [...new Set(handOver.map((i) => i.contacts))].flat();
        const batch: WhatsAppInboundBatch = { phone_number_id: phoneNumberId, display_phone_number: displayPhoneNumber ?? undefined, business_account_id: businessAccountId ?? undefined, contacts, messages: handOver.map((i) => i.message) };
        await this.rpc.call('messaging', MessagingWhatsAppRpc.Inbound, batch);
      }
      return items.map(() => true as const);
    },
    INBOUND_HAND_OVER_MAX,
    notUnavailable,
  );

  constructor(
    private readonly rpc: RpcClient,
    @Inject(LOGGER) private readonly logger: Logger,
  ) {}

  /** @throws AppError service_unavailable when an owner did not confirm in time */
  async deliver(payload: unknown): Promise<MetaDeliveryResult> {
    const result: MetaDeliveryResult = { statuses: 0, messages: 0, errors: 0, ignored: 0 };
    const body = payload as { object?: string; entry?: { id?: string; changes?: MetaChange[] }[] } | null;
    if (body?.object !== 'whatsapp_business_account' || !Array.isArray(body.entry)) {
      result.ignored++;
      return result;
    }
    const calls: Promise<unknown>[] = [];
    for (const entry of body.entry) {
      // A signed body of another shape is Meta's mistake or a new format: ignored (200), never a 5xx that Meta would retry forever.
      if (!Array.isArray(entry?.changes)) {
        result.ignored++;
        continue;
      }
      for (const change of entry.changes) {
        const value = change?.value;
        const phoneNumberId = value?.metadata?.phone_number_id;
        if (change?.field !== 'messages' || !value || typeof phoneNumberId !== 'string') {
          result.ignored++;
          continue;
        }
        const lane = JSON.stringify([phoneNumberId, value.metadata?.display_phone_number ?? null, entry.id ?? null]);
        if (Array.isArray(value.statuses) && value.statuses.length) {
          result.statuses += value.statuses.length;
          calls.push(this.statusHandOver.submit(lane, value.statuses));
        }
        // Errors about the number itself, with no status or message (an asynchronous 130429): the dispatcher paces by them.
        if (Array.isArray(value.errors) && value.errors.length) {
          result.errors += value.errors.length;
          const batch: WhatsAppWebhookErrorBatch = { phone_number_id: phoneNumberId, business_account_id: entry.id, errors: value.errors };
          calls.push(this.rpc.call('outbox-dispatcher', OutboxRpc.WhatsAppWebhookErrors, batch));
        }
        if (Array.isArray(value.messages) && value.messages.length) {
          result.messages += value.messages.length;
          const contacts = Array.isArray(value.contacts) ? value.contacts : [];
          calls.push(
            this.inboundHandOver.submit(
              lane,
              value.messages.map((message) => ({ message, contacts })),
            ),
          );
        }
      }
    }
    const settled = await Promise.allSettled(calls);
    const failed = settled.filter((s): s is PromiseRejectedResult => s.status === 'rejected');
    if (failed.length) {
      const reason = failed[0].reason as Error;
      this.logger.warn({ event: 'gateway.meta_webhook_not_stored', failed: failed.length, of: calls.length, err: reason?.message }, 'Meta webhook not acknowledged; Meta will redeliver');
      throw new AppError(ErrorCode.ServiceUnavailable, 'the webhook could not be stored; retry later', { code: reason instanceof AppError ? reason.code : undefined });
    }
    return result;
  }
}
