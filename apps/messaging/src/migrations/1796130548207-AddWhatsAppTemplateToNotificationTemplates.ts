import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The approved WhatsApp template a notification template names, sent instead of its text when the
 * contact's 24-hour customer-service window is closed (Meta refuses free text there, 131047):
 * `{ name, language, parameters }`, `parameters` being the notification variables that fill the
 * template body's `{{1}}`, `{{2}}`, … in order. Null: the template has none.
 */
export class AddWhatsAppTemplateToNotificationTemplates1796130548207 implements MigrationInterface {
  name = 'AddWhatsAppTemplateToNotificationTemplates1796130548207';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE notification_templates ADD COLUMN whatsapp_template jsonb NULL CHECK (whatsapp_template IS NULL OR jsonb_typeof(whatsapp_template) = 'object')`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE notification_templates DROP COLUMN whatsapp_template`);
  }
}
