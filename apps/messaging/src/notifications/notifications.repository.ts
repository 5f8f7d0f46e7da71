import { Injectable } from '@nestjs/common';
import type { NotificationChannel, NotificationDeliveryStatus, NotificationDeliveryView, NotificationTemplateView, NotificationView, NotificationWhatsAppTemplate } from '@touchpoint/contracts';
import { cursorAtSql, type CursorPosition, iso, rowsOf, type Tx } from '@touchpoint/database';

export interface NotificationRow {
  id: string;
  organization_id: string;
  contact_id: string;
  template_key: string | null;
  title: string | null;
  body: string;
  priority: string;
  data: Record<string, unknown>;
  idempotency_key: string | null;
  /** sha256 of the creating request when it carried an idempotency key (null on older rows). */
  request_hash: string | null;
  conversation_instance_id: string | null;
  created_at: Date;
}

export interface TemplateRow {
  key: string;
  title: string | null;
  body: string;
  whatsapp_template: NotificationWhatsAppTemplate | null;
  updated_at: Date;
}

export interface DeliveryRow {
  id: string;
  organization_id: string;
  notification_id: string;
  channel: NotificationChannel;
  status: NotificationDeliveryStatus;
  message_id: string | null;
  error_code: string | null;
  updated_at: Date;
}

/** Every SQL statement about notifications, their deliveries, templates and preferences. */
@Injectable()
export class NotificationsRepository {
  async findTemplate(tx: Tx, organizationId: string, key: string): Promise<TemplateRow | null> {
    const rows = await tx.query<TemplateRow>(`SELECT key, title, body, whatsapp_template, updated_at FROM notification_templates WHERE organization_id = $1 AND key = $2`, [organizationId, key]);
    return rows[0] ?? null;
  }

  async upsertTemplate(tx: Tx, organizationId: string, key: string, title: string | null, body: string, whatsappTemplate: NotificationWhatsAppTemplate | null, now: Date): Promise<TemplateRow> {
    const [row] = await tx.query<TemplateRow>(
      `INSERT INTO notification_templates (organization_id, key, title, body, whatsapp_template, created_at, updated_at) VALUES ($1, $2, $3, $4, $5, $6, $6)
       ON CONFLICT ON CONSTRAINT notification_templates_key DO UPDATE
         SET title = EXCLUDED.title, body = EXCLUDED.body, whatsapp_template = EXCLUDED.whatsapp_template, updated_at = EXCLUDED.updated_at
       RETURNING key, title, body, whatsapp_template, updated_at`,
      [organizationId, key, title, body, whatsappTemplate === null ? null : JSON.stringify(whatsappTemplate), now],
    );
    return row!;
  }

  async listTemplates(tx: Tx, organizationId: string): Promise<TemplateRow[]> {
    return tx.query<TemplateRow>(`SELECT key, title, body, whatsapp_template, updated_at FROM notification_templates WHERE organization_id = $1 ORDER BY key`, [organizationId]);
  }

  /** Channels the contact turned off. */
  async disabledChannels(tx: Tx, organizationId: string, contactId: string): Promise<Set<string>> {
    const rows = await tx.query<{ channel: string }>(`SELECT channel FROM notification_preferences WHERE organization_id = $1 AND contact_id = $2 AND NOT enabled`, [organizationId, contactId]);
    return new Set(rows.map((r) => r.channel));
  }

  async setPreference(tx: Tx, organizationId: string, contactId: string, channel: string, enabled: boolean, now: Date): Promise<void> {
    await tx.query(
      `INSERT INTO notification_preferences (organization_id, contact_id, channel, enabled, updated_at) VALUES ($1, $2, $3, $4, $5)
       ON CONFLICT (organization_id, contact_id, channel) DO UPDATE SET enabled = EXCLUDED.enabled, updated_at = EXCLUDED.updated_at`,
      [organizationId, contactId, channel, enabled, now],
    );
  }

  async listPreferences(tx: Tx, organizationId: string, contactId: string) {
    return tx.query<{ channel: string; enabled: boolean }>(`SELECT channel, enabled FROM notification_preferences WHERE organization_id = $1 AND contact_id = $2 ORDER BY channel`, [organizationId, contactId]);
  }

  /** Inserts a notification; null when its idempotency key already has one. */
  async insert(tx: Tx, n: Omit<NotificationRow, 'id' | 'conversation_instance_id' | 'created_at'>, now: Date): Promise<NotificationRow | null> {
    const rows = await tx.query<NotificationRow>(
      `INSERT INTO notifications (organization_id, contact_id, template_key, title, body, priority, data, idempotency_key, request_hash, created_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7::jsonb, $8, $9, $10) ON CONFLICT DO NOTHING RETURNING *`,
      [n.organization_id, n.contact_id, n.template_key, n.title, n.body, n.priority, JSON.stringify(n.data), n.idempotency_key, n.request_hash, now],
    );
    return rows[0] ?? null;
  }

  async findByIdempotencyKey(tx: Tx, organizationId: string, key: string): Promise<NotificationRow | null> {
    const rows = await tx.query<NotificationRow>(`SELECT * FROM notifications WHERE organization_id = $1 AND idempotency_key = $2`, [organizationId, key]);
    return rows[0] ?? null;
  }

  async findById(tx: Tx, organizationId: string, notificationId: string): Promise<NotificationRow | null> {
    const rows = await tx.query<NotificationRow>(`SELECT * FROM notifications WHERE organization_id = $1 AND id = $2`, [organizationId, notificationId]);
    return rows[0] ?? null;
  }

  async linkInstance(tx: Tx, notificationId: string, instanceId: string): Promise<void> {
    await tx.query(`UPDATE notifications SET conversation_instance_id = COALESCE(conversation_instance_id, $2) WHERE id = $1`, [notificationId, instanceId]);
  }

  async insertDelivery(tx: Tx, organizationId: string, notificationId: string, channel: NotificationChannel, status: NotificationDeliveryStatus, now: Date): Promise<DeliveryRow> {
    const [row] = await tx.query<DeliveryRow>(`INSERT INTO notification_deliveries (organization_id, notification_id, channel, status, created_at, updated_at) VALUES ($1, $2, $3, $4, $5, $5) RETURNING *`, [organizationId, notificationId, channel, status, now]);
    return row;
  }

  async setDeliveryMessage(tx: Tx, deliveryId: string, messageId: string): Promise<void> {
    await tx.query(`UPDATE notification_deliveries SET message_id = $2 WHERE id = $1`, [deliveryId, messageId]);
  }

  /**
   * Settles a delivery (seed 004 "Notification delivery status": `pending` until the dispatcher's
   * outcome): `pending → sent | failed`, and `sent → failed` when the provider reports the failure
   * after accepting the send (Meta's usual order: `sent`, then `failed`). Nothing else moves: a
   * failed delivery never becomes sent again, and `skipped` is final. Returns null when the row
   * did not move.
   */
  async settleDelivery(tx: Tx, deliveryId: string, status: 'sent' | 'failed', errorCode: string | null, now: Date): Promise<DeliveryRow | null> {
    const result = await rowsOf<DeliveryRow>(
      tx,
      `UPDATE notification_deliveries SET status = $2, error_code = $3, updated_at = $4
        WHERE id = $1 AND (status = 'pending' OR (status = 'sent' AND $2 = 'failed')) RETURNING *`,
      [deliveryId, status, errorCode, now],
    );
    return result[0] ?? null;
  }

  async deliveries(tx: Tx, notificationIds: string[]): Promise<DeliveryRow[]> {
    if (notificationIds.length === 0) return [];
    return tx.query<DeliveryRow>(`SELECT * FROM notification_deliveries WHERE notification_id = ANY($1::uuid[]) ORDER BY created_at, channel`, [notificationIds]);
  }

  async list(tx: Tx, organizationId: string, f: { contact_id?: string; after?: CursorPosition | null }, limit: number): Promise<(NotificationRow & { cursor_at: string })[]> {
    return tx.query<NotificationRow & { cursor_at: string }>(
      `SELECT *, ${cursorAtSql('created_at')} AS cursor_at FROM notifications WHERE organization_id = $1 AND ($2::uuid IS NULL OR contact_id = $2)
          AND ($3::timestamptz IS NULL OR (created_at, id) < ($3::timestamptz, $4::uuid))
        ORDER BY created_at DESC, id DESC LIMIT $5`,
      [organizationId, f.contact_id ?? null, f.after?.createdAt ?? null, f.after?.id ?? null, limit],
    );
  }
}

export function toDeliveryView(d: DeliveryRow): NotificationDeliveryView {
  return { id: d.id, channel: d.channel, status: d.status, message_id: d.message_id, error_code: d.error_code, updated_at: iso(d.updated_at)! };
}

export function toNotificationView(n: NotificationRow, deliveries: DeliveryRow[]): NotificationView {
  return {
    id: n.id,
    organization_id: n.organization_id,
    contact_id: n.contact_id,
    template_key: n.template_key,
    title: n.title,
    body: n.body,
    priority: n.priority,
    conversation_instance_id: n.conversation_instance_id,
    data: n.data,
    deliveries: deliveries.filter((d) => d.notification_id === n.id).map(toDeliveryView),
    created_at: iso(n.created_at)!,
  };
}

/** A template as the template RPCs answer it. */
export function toTemplateView(r: TemplateRow): NotificationTemplateView {
  return { key: r.key, title: r.title, body: r.body, whatsapp_template: r.whatsapp_template ?? null, updated_at: new Date(r.updated_at).toISOString() };
}
