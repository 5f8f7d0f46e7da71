import { Controller, type DynamicModule, Injectable, Module } from '@nestjs/common';
import { MessagePattern, Payload } from '@nestjs/microservices';
import { randomUUID } from 'node:crypto';
import { OnBusMessage } from '@touchpoint/bus';
import type { ServiceConfig } from '@touchpoint/config';
import {
  type BusMessage,
  type EmailHeadersQuery,
  type EmailHeadersView,
  type LinkedinStateQuery,
  type LinkedinStateView,
  OutboxCommands,
  type OutboxEnqueueData,
  type OutboxEntryEventData,
  OutboxEvents,
  OutboxRpc,
  type OutboxSenderView,
  type OutboxSuppressionData,
  OutreachDispatcherRpc,
  type ProviderAccountLookup,
  type ProviderAccountOwner,
  type SuppressionCheckData,
  OutboxAccountRpc,
} from '@touchpoint/contracts';
import type { Tx } from '@touchpoint/database';
import { AppError, ErrorCode } from '@touchpoint/errors';
import { PlatformModule, UnitOfWork } from '@touchpoint/runtime';

/**
 * A stand-in for the outbox-dispatcher's email and LinkedIn side, which is not built yet:
 * it answers the RPCs outreach reads (suppressions, senders, LinkedIn state) from state a
 * test sets, records the `outbox.enqueue` commands messaging sends, and lets the test settle each
 * entry with a real `outbox.entry.*` event through the bus, as the dispatcher would.
 */
@Injectable()
export class DispatcherStandIn {
  /** `${org}|${channel}|${value}` */
  readonly suppressions = new Set<string>();
  readonly senders = new Map<string, OutboxSenderView>();
  /** `${org}|${sender}|${linkedin_url}` → state. */
  readonly linkedin = new Map<string, LinkedinStateView>();
  readonly enqueued: OutboxEnqueueData[] = [];
  /** When set, the suppression RPC fails (the list is unreadable). */
  suppressionOutage = false;
  /** When set, the suppression RPC answers only after this long, ms (a dispatcher too slow to answer). */
  suppressionDelayMs = 0;
  /** `${channel}|${account_id}` → owner (Nylas grants, Unipile accounts), for the webhook ingress. */
  readonly accounts = new Map<string, ProviderAccountOwner>();
  /** When set, the synchronous suppression add fails (the dispatcher cannot confirm). */
  suppressionAddOutage = false;
  /** Every synchronous suppression add asked of the stand-in, in order. */
  readonly suppressionAdds: OutboxSuppressionData[] = [];
  /** When set, the account lookup fails (the dispatcher is down for the gateway). */
  accountLookupOutage = false;
  /** `${sender_id}|${provider_message_id}` → the headers a Nylas read answers (none by default). */
  readonly emailHeaders = new Map<string, EmailHeadersView>();
  /** Every header read asked of the stand-in. */
  readonly headerReads: EmailHeadersQuery[] = [];

  constructor(private readonly uow: UnitOfWork) {}

  suppress(org: string, channel: 'email' | 'linkedin', value: string): void {
    this.suppressions.add(`${org}|${channel}|${channel === 'email' ? value.toLowerCase() : value}`);
  }

  addSender(org: string, channel: 'email' | 'linkedin', status: 'connected' | 'disconnected' = 'connected'): string {
    const id = randomUUID();
    const now = new Date().toISOString();
    this.senders.set(id, { id, organization_id: org, channel, label: null, phone_number_id: null, display_phone_number: null, business_account_id: null, status, is_default: true, has_credentials: true, created_at: now, updated_at: now });
    return id;
  }

  setLinkedin(org: string, senderId: string, linkedinUrl: string, view: LinkedinStateView): void {
    this.linkedin.set(`${org}|${senderId}|${linkedinUrl}`, view);
  }

  entriesFor(key: string): OutboxEnqueueData[] {
    return this.enqueued.filter((e) => e.idempotency_key === key);
  }

  /** Publishes the outcome of an enqueued entry as the dispatcher would. */
  async settle(entry: OutboxEnqueueData, outcome: 'accepted' | 'failed' | 'ambiguous', extra: Partial<OutboxEntryEventData> = {}): Promise<void> {
    const type = outcome === 'accepted' ? OutboxEvents.EntryAccepted : outcome === 'failed' ? OutboxEvents.EntryFailed : OutboxEvents.EntryAmbiguous;
    const data: OutboxEntryEventData = {
      entry_id: randomUUID(),
      idempotency_key: entry.idempotency_key,
      channel: entry.channel,
      to: entry.to,
      sender_id: entry.sender_id ?? null,
      payload_type: entry.payload.type,
      provider_message_id: outcome === 'accepted' ? `prov-${randomUUID()}` : null,
      classification: outcome === 'ambiguous' ? 'ambiguous' : outcome === 'failed' ? 'permanent' : null,
      attempts: 1,
      log_context: entry.log_context ?? {},
      ...extra,
    };
    await this.uow.run((tx) => tx.publish({ event_id: `${type}:${data.entry_id}`, type, organization_id: entry.organization_id, data: data }));
  }

  /** `outbox.suppress` commands received, in order (the dispatcher upserts each into contact_suppressions). */
  readonly suppressCommands: OutboxSuppressionData[] = [];

  @OnBusMessage(OutboxCommands.Suppress)
  async onSuppress(message: BusMessage<OutboxSuppressionData>, _tx: Tx): Promise<void> {
    this.suppressCommands.push(message.data);
    this.suppress(message.data.organization_id, message.data.channel as 'email' | 'linkedin', message.data.value);
  }

  @OnBusMessage(OutboxCommands.Enqueue)
  async onEnqueue(message: BusMessage<OutboxEnqueueData>, _tx: Tx): Promise<void> {
    this.enqueued.push(message.data);
  }
}

@Controller()
class DispatcherStandInController {
  constructor(private readonly state: DispatcherStandIn) {}

  @MessagePattern(OutreachDispatcherRpc.SuppressionCheck)
  async check(@Payload() data: SuppressionCheckData) {
    if (this.state.suppressionDelayMs > 0) await new Promise((resolve) => setTimeout(resolve, this.state.suppressionDelayMs));
    if (this.state.suppressionOutage) throw new AppError(ErrorCode.ServiceUnavailable, 'suppressions unreadable');
    return { suppressed: data.values.filter((v) => this.state.suppressions.has(`${data.organization_id}|${v.channel}|${v.channel === 'email' ? v.value.toLowerCase() : v.value}`)) };
  }

  /** The synchronous add messaging and outreach ask for before they acknowledge an opt-out, an unsubscribe link or a bounce. */
  @MessagePattern(OutboxAccountRpc.SuppressionAdd)
  add(@Payload() data: OutboxSuppressionData) {
    this.state.suppressionAdds.push(data);
    if (this.state.suppressionAddOutage) throw new AppError(ErrorCode.ServiceUnavailable, 'suppressions unwritable');
    const key = `${data.organization_id}|${data.channel}|${data.channel === 'email' ? data.value.toLowerCase() : data.value}`;
    const created = !this.state.suppressions.has(key);
    this.state.suppressions.add(key);
    return { channel: data.channel, value: data.value, created, cancelled_entry_ids: [], in_flight: 0 };
  }

  @MessagePattern(OutboxRpc.SenderGet)
  sender(@Payload() data: { organization_id: string; sender_id: string }) {
    const sender = this.state.senders.get(data.sender_id);
    if (!sender || sender.organization_id !== data.organization_id) throw new AppError(ErrorCode.NotFound, 'sender not found');
    return sender;
  }

  @MessagePattern(OutreachDispatcherRpc.SenderLookupByAccount)
  account(@Payload() data: ProviderAccountLookup): ProviderAccountOwner {
    if (this.state.accountLookupOutage) throw new AppError(ErrorCode.ServiceUnavailable, 'dispatcher unavailable');
    return this.state.accounts.get(`${data.channel}|${data.account_id}`) ?? { organization_id: null, sender_id: null, address: null };
  }

  @MessagePattern(OutreachDispatcherRpc.EmailHeaders)
  headers(@Payload() data: EmailHeadersQuery): EmailHeadersView {
    this.state.headerReads.push(data);
    return this.state.emailHeaders.get(`${data.sender_id}|${data.provider_message_id}`) ?? { headers: [], subject: null };
  }

  @MessagePattern(OutreachDispatcherRpc.LinkedinState)
  linkedin(@Payload() data: LinkedinStateQuery): LinkedinStateView {
    const sender = this.state.senders.get(data.sender_id);
    const known = this.state.linkedin.get(`${data.organization_id}|${data.sender_id}|${data.linkedin_url}`);
    return known ?? { state: 'none', sender_connected: sender?.status === 'connected', messages: [] };
  }
}

/** The stand-in as a service of the test world (it owns the `outbox` schema's bus tables only). */
export function dispatcherStandIn(config: ServiceConfig): DynamicModule {
  @Module({})
  class DispatcherStandInRoot {}
  return {
    module: DispatcherStandInRoot,
    imports: [PlatformModule.forService({ service: 'outbox-dispatcher', config, entities: [], migrations: [] })],
    controllers: [DispatcherStandInController],
    providers: [DispatcherStandIn],
  };
}
