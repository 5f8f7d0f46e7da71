import { Injectable } from '@nestjs/common';
import type { Tx } from '@touchpoint/database';

export interface WhatsAppSenderRow {
  phone_number_id: string;
  organization_id: string;
  sender_id: string;
  status: string;
}

/** Read model of `outbox.sender.*`: which organization owns a WhatsApp business number. */
@Injectable()
export class SendersRepository {
  async upsert(tx: Tx, s: { phone_number_id: string; organization_id: string; sender_id: string; display_phone_number: string | null; status: string }, now: Date): Promise<void> {
    await tx.query(
      `INSERT INTO whatsapp_senders (phone_number_id, organization_id, sender_id, display_phone_number, status, updated_at) VALUES ($1, $2, $3, $4, $5, $6)
       ON CONFLICT (phone_number_id) DO UPDATE SET organization_id = EXCLUDED.organization_id, sender_id = EXCLUDED.sender_id,
              display_phone_number = COALESCE(EXCLUDED.display_phone_number, whatsapp_senders.display_phone_number), status = EXCLUDED.status, updated_at = EXCLUDED.updated_at`,
      [s.phone_number_id, s.organization_id, s.sender_id, s.display_phone_number, s.status, now],
    );
  }

  async find(tx: Tx, phoneNumberId: string): Promise<WhatsAppSenderRow | null> {
    const rows = await tx.query<WhatsAppSenderRow>(`SELECT phone_number_id, organization_id, sender_id, status FROM whatsapp_senders WHERE phone_number_id = $1`, [phoneNumberId]);
    return rows[0] ?? null;
  }
}
