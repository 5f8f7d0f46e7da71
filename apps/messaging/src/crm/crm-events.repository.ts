import { Injectable } from '@nestjs/common';
import type { Tx } from '@touchpoint/database';

/** An accepted CRM event, as the ingress remembers it. */
export interface CrmEventRow {
  organization_id: string;
  event_id: string;
  type: string;
  contact_id: string;
  received_at: Date;
}

/** Every SQL statement about accepted CRM events. */
@Injectable()
export class CrmEventsRepository {
  /**
   * Claims the CRM's event id for the organization. Null when it was claimed before: the primary
   * key makes two concurrent deliveries of one event publish it once.
   */
  async claim(tx: Tx, row: CrmEventRow): Promise<CrmEventRow | null> {
    const rows = await tx.query<CrmEventRow>(
      `INSERT INTO crm_events (organization_id, event_id, type, contact_id, received_at) VALUES ($1, $2, $3, $4, $5)
       ON CONFLICT (organization_id, event_id) DO NOTHING
       RETURNING *`,
      [row.organization_id, row.event_id, row.type, row.contact_id, row.received_at],
    );
    return rows[0] ?? null;
  }

  async find(tx: Tx, organizationId: string, eventId: string): Promise<CrmEventRow | null> {
    const rows = await tx.query<CrmEventRow>(`SELECT * FROM crm_events WHERE organization_id = $1 AND event_id = $2`, [organizationId, eventId]);
    return rows[0] ?? null;
  }
}
