import { Injectable } from '@nestjs/common';
import { OnBusMessage } from '@touchpoint/bus';
import { type BusMessage, type CrmDealEventData, CrmEvents, type CrmLeadEventData, FollowupsEvents } from '@touchpoint/contracts';
import type { Tx } from '@touchpoint/database';
import { Clock } from '@touchpoint/time';
import { StopPathsService } from '../stop-paths/stop-paths.service.js';
import { RuleCache } from './rule-cache.js';
import { TriggerRecorder } from './trigger-recorder.js';

/**
 * CRM events (their contract: `CrmEvents` in @touchpoint/contracts, published by messaging's CRM
 * ingress) as rule triggers and, for a closed lead, a stop path; and the rule cache's invalidation.
 */
@Injectable()
export class CrmTriggersConsumer {
  constructor(
    private readonly recorder: TriggerRecorder,
    private readonly rules: RuleCache,
    private readonly stopPaths: StopPathsService,
    private readonly clock: Clock,
  ) {}

  @OnBusMessage(CrmEvents.LeadCreated)
  async onLeadCreated(message: BusMessage<CrmLeadEventData>, tx: Tx): Promise<void> {
    if (!message.organization_id || !message.data?.contact_id) return;
    await this.recorder.record(tx, { organizationId: message.organization_id, kind: 'lead_created', eventId: message.event_id, contactId: message.data.contact_id, data: { lead_id: message.data.lead_id, status: message.data.status ?? null }, at: this.clock.now() });
  }

  @OnBusMessage(CrmEvents.LeadStatusChanged)
  async onLeadStatusChanged(message: BusMessage<CrmLeadEventData>, tx: Tx): Promise<void> {
    if (!message.organization_id || !message.data?.contact_id) return;
    // The stop first: a rule that the same status starts enrolls after it, not into its reach.
    if (message.data.closed === 'won' || message.data.closed === 'lost') await this.stopPaths.onLeadClosed(tx, message.organization_id, message.data.contact_id, message.data.closed, this.clock.now());
    await this.recorder.record(tx, {
      organizationId: message.organization_id,
      kind: 'lead_status_changed',
      eventId: message.event_id,
      contactId: message.data.contact_id,
      data: { lead_id: message.data.lead_id, status: message.data.status ?? null, previous_status: message.data.previous_status ?? null },
      at: this.clock.now(),
    });
  }

  @OnBusMessage(CrmEvents.DealStageChanged)
  async onDealStageChanged(message: BusMessage<CrmDealEventData>, tx: Tx): Promise<void> {
    if (!message.organization_id || !message.data?.contact_id) return;
    await this.recorder.record(tx, {
      organizationId: message.organization_id,
      kind: 'deal_stage_changed',
      eventId: message.event_id,
      contactId: message.data.contact_id,
      data: { deal_id: message.data.deal_id, stage_id: message.data.stage_id, previous_stage_id: message.data.previous_stage_id ?? null },
      at: this.clock.now(),
    });
  }

  /** A flow published or switched on or off: its organization's rule kinds are read again. */
  @OnBusMessage(FollowupsEvents.FlowStatusChanged)
  async onFlowStatusChanged(message: BusMessage<unknown>): Promise<void> {
    if (message.organization_id) this.rules.invalidate(message.organization_id);
  }

  @OnBusMessage(FollowupsEvents.FlowPublished)
  async onFlowPublished(message: BusMessage<unknown>): Promise<void> {
    if (message.organization_id) this.rules.invalidate(message.organization_id);
  }
}
