import { Injectable } from '@nestjs/common';
import { CRM_EVENT_TYPES, CRM_LEAD_CLOSED, type CrmDealEventData, type CrmEventIngestData, type CrmEventIngestResult, CrmEvents, type CrmEventType, type CrmLeadEventData, type OutgoingMessage } from '@touchpoint/contracts';
import { isUuid, type Tx } from '@touchpoint/database';
import { AppError, ErrorCode } from '@touchpoint/errors';
import { UnitOfWork } from '@touchpoint/runtime';
import { codePointLength } from '@touchpoint/text';
import { Clock } from '@touchpoint/time';
import { normalizePhone } from '../contacts/contacts.service.js';
import { type ContactRow, ContactsRepository } from '../contacts/contacts.repository.js';
import { CrmEventsRepository } from './crm-events.repository.js';

/** Longest CRM id we keep (event, lead, deal, status, stage), code points. */
export const CRM_ID_MAX = 200;

const BUS_TYPE = {
  'lead.created': CrmEvents.LeadCreated,
  'lead.status_changed': CrmEvents.LeadStatusChanged,
  'deal.stage_changed': CrmEvents.DealStageChanged,
} as const satisfies Record<CrmEventType, string>;

/** A CRM event's bus name and its data before the contact and the event's own facts are added. */
type CrmPayload = { type: typeof CrmEvents.DealStageChanged; data: Omit<CrmDealEventData, 'contact_id'> } | { type: typeof CrmEvents.LeadCreated | typeof CrmEvents.LeadStatusChanged; data: Omit<CrmLeadEventData, 'contact_id'> };

function invalid(field: string, message: string): AppError {
  return new AppError(ErrorCode.ValidationFailed, message, { field });
}

function crmId(value: unknown, field: string, required: boolean): string | undefined {
  if (value === undefined || value === null) {
    if (required) throw invalid(field, `${field} is required`);
    return undefined;
  }
  if (typeof value !== 'string' || value.trim() === '' || codePointLength(value) > CRM_ID_MAX) throw invalid(field, `${field} must be a non-empty string of at most ${CRM_ID_MAX} characters`);
  return value.trim();
}

/**
 * CRM events entering the platform (seed 000 "Trigger hooks": lead created / status, deal stage;
 * "Stop hooks": lead closed). The gateway has checked the caller (a `crm:write` key or the signed
 * webhook); here the contact is resolved among the organization's contacts and the event is
 * published as a `CrmEvents` event through our outbox, in the transaction that claims the CRM's
 * event id, so a redelivery publishes nothing more and the answer comes only once it is stored.
 */
@Injectable()
export class CrmEventsService {
  constructor(
    private readonly uow: UnitOfWork,
    private readonly contacts: ContactsRepository,
    private readonly repository: CrmEventsRepository,
    private readonly clock: Clock,
  ) {}

  /**
   * @returns the bus event id, the resolved contact and `duplicate: true` on a replay of the same
   *   CRM event id (whose first answer it repeats; the payload of the replay is not read again)
   * @throws AppError validation_failed (the fields of `type`), unknown_contact (422: no live
   *   contact of the organization has that id, email or phone)
   */
  async ingest(data: CrmEventIngestData): Promise<CrmEventIngestResult> {
    const eventId = crmId(data.event_id, 'event_id', true)!;
    if (!CRM_EVENT_TYPES.includes(data.type)) throw invalid('type', `type must be one of ${CRM_EVENT_TYPES.join(', ')}`);
    const payload = this.payloadOf(data);
    const occurredAt = data.occurred_at === undefined ? null : Date.parse(data.occurred_at);
    if (occurredAt !== null && Number.isNaN(occurredAt)) throw invalid('occurred_at', 'occurred_at must be an ISO-8601 instant');
    return this.uow.run(async (tx) => {
      const earlier = await this.repository.find(tx, data.organization_id, eventId);
      if (earlier) return this.resultOf(earlier, true);
      const contact = await this.resolveContact(tx, data.organization_id, data.contact ?? {});
      const now = this.clock.now();
      const claimed = await this.repository.claim(tx, { organization_id: data.organization_id, event_id: eventId, type: data.type, contact_id: contact.id, received_at: now });
      if (!claimed) {
        // A concurrent delivery of the same event committed between our read and our insert.
        const winner = await this.repository.find(tx, data.organization_id, eventId);
        return this.resultOf(winner!, true);
      }
      // When the CRM saw it happen; the envelope's own time is when we stored it.
      const facts = { contact_id: contact.id, crm_event_id: eventId, crm_occurred_at: new Date(occurredAt ?? now.getTime()).toISOString() };
      const busId = busEventId(data.organization_id, eventId);
      const message: OutgoingMessage =
        payload.type === CrmEvents.DealStageChanged
          ? { event_id: busId, type: payload.type, organization_id: data.organization_id, data: { ...payload.data, ...facts } }
          : { event_id: busId, type: payload.type, organization_id: data.organization_id, data: { ...payload.data, ...facts } };
      await tx.publish(message);
      return this.resultOf(claimed, false);
    });
  }

  /** The fields each type needs, validated and trimmed (without the contact). */
  private payloadOf(data: CrmEventIngestData): CrmPayload {
    if (data.type === 'deal.stage_changed') {
      const deal: Omit<CrmDealEventData, 'contact_id'> = { deal_id: crmId(data.deal_id, 'deal_id', true)!, stage_id: crmId(data.stage_id, 'stage_id', true)!, previous_stage_id: crmId(data.previous_stage_id, 'previous_stage_id', false) ?? null };
      return { type: BUS_TYPE[data.type], data: deal };
    }
    const lead: Omit<CrmLeadEventData, 'contact_id'> = { lead_id: crmId(data.lead_id, 'lead_id', true)! };
    const status = crmId(data.status, 'status', data.type === 'lead.status_changed');
    if (status !== undefined) lead.status = status;
    if (data.type === 'lead.status_changed') lead.previous_status = crmId(data.previous_status, 'previous_status', false) ?? null;
    if (data.closed !== undefined && data.closed !== null) {
      if (data.type !== 'lead.status_changed') throw invalid('closed', 'closed is set only on lead.status_changed');
      if (!CRM_LEAD_CLOSED.includes(data.closed)) throw invalid('closed', `closed must be one of ${CRM_LEAD_CLOSED.join(', ')}`);
      lead.closed = data.closed;
    }
    return { type: BUS_TYPE[data.type], data: lead };
  }

  /** The contact by id, else by email, else by phone (a CRM record before a prospect). @throws AppError validation_failed, unknown_contact */
  private async resolveContact(tx: Tx, organizationId: string, ref: { contact_id?: string; email?: string; phone?: string }): Promise<ContactRow> {
    if (!ref.contact_id && !ref.email && !ref.phone) throw invalid('contact', 'contact needs one of contact_id, email or phone');
    let row: ContactRow | null = null;
    if (ref.contact_id) {
      if (!isUuid(ref.contact_id)) throw invalid('contact.contact_id', 'contact.contact_id must be a UUID');
      row = await this.contacts.findById(tx, organizationId, ref.contact_id);
      if (row?.erased_at) row = null;
    } else if (ref.email) {
      if (typeof ref.email !== 'string') throw invalid('contact.email', 'contact.email must be a string');
      row = await this.contacts.findByEmailKey(tx, organizationId, ref.email.trim().toLowerCase());
    }
    if (!row && !ref.contact_id && ref.phone) {
      const phone = normalizePhone(ref.phone);
      if (phone) row = await this.contacts.findByPhoneKey(tx, organizationId, phone.phone_key);
    }
    if (!row) throw new AppError(ErrorCode.UnknownContact, "no contact of the organization matches the event's contact");
    return row;
  }

  private resultOf(row: { organization_id: string; event_id: string; type: string; contact_id: string; received_at: Date }, duplicate: boolean): CrmEventIngestResult {
    return { event_id: busEventId(row.organization_id, row.event_id), type: row.type as CrmEventType, contact_id: row.contact_id, duplicate, received_at: new Date(row.received_at).toISOString() };
  }
}

/** The bus event id of a CRM event: derived from its cause (DESIGN §2), so a replay is a no-op. */
export function busEventId(organizationId: string, crmEventId: string): string {
  return `crm:${organizationId}:${crmEventId}`;
}
