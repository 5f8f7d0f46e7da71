import { randomUUID } from 'node:crypto';
import type { CampaignCreateData, CampaignView, ContactCreateData } from '@touchpoint/contracts';
import { anEnrollment, createCampaign } from '@touchpoint/testing';
import type { OutreachWorld } from './outreach-world.js';

/** Row builders for outreach tests, with sensible defaults (STYLE: builders in tests). */
export function outreachBuilders(w: OutreachWorld) {
  return {
    campaign: (org: string, extra: Record<string, unknown> = {}): Promise<CampaignView> => createCampaign(w.rpc, org, extra as Partial<CampaignCreateData>),

    /** Enrolls a new contact; returns the enrollment id and the contact. */
    enrollment: (org: string, campaignId: string, contact: Record<string, unknown> = {}) => anEnrollment(w.rpc, org, campaignId, contact as Partial<ContactCreateData>),

    /**
     * A saved decision and its pending draft, as the decision runner leaves them (the enrollment
     * moves to v+1 with no next check).
     */
    async pendingAction(org: string, enrollmentId: string, a: { type?: string; draft?: Record<string, unknown>; replyTo?: { id: string; text: string }; followupDays?: number } = {}) {
      const [enrollment] = await w.sql(`SELECT * FROM {o}.enrollments WHERE id = $1`, [enrollmentId]);
      const type = a.type ?? 'email';
      const [decision] = await w.sql(
        `INSERT INTO {o}.decisions (organization_id, enrollment_id, trigger_event_id, trigger_reason, context_version, outcome, type, rationale, objective, followup_days,
                                    reply_to_message_id, reply_to_text, created_at, updated_at)
         VALUES ($1, $2, $3, 'enrolled', $4, 'saved', $5, 'Fresh enrollment: no thread yet.', 'Introduce the chairs and ask for a call.', $6, $7, $8, now(), now()) RETURNING id`,
        [org, enrollmentId, `test:${randomUUID()}`, enrollment!.context_version, type, a.followupDays ?? 3, a.replyTo?.id ?? null, a.replyTo?.text ?? null],
      );
      await w.sql(`UPDATE {o}.enrollments SET context_version = context_version + 1, next_check_at = NULL WHERE id = $1`, [enrollmentId]);
      const draft = a.draft ?? (type === 'email' ? { subject: 'Chairs for Acme', body: 'Hi Sarah, would a 20 minute call next week help?' } : type === 'linkedin_connection' ? { note: 'Hi Sarah, glad to connect.' } : { body: 'Thanks for connecting, Sarah!' });
      const [action] = await w.sql(
        `INSERT INTO {o}.proposed_actions (organization_id, enrollment_id, campaign_id, decision_id, type, status, draft_payload, created_at, updated_at)
         VALUES ($1, $2, $3, $4, $5, 'pending_approval', $6, now(), now()) RETURNING id`,
        [org, enrollmentId, enrollment!.campaign_id, decision!.id, type, JSON.stringify(draft)],
      );
      return { actionId: action!.id as string, decisionId: decision!.id as string, draft };
    },

    action: async (id: string) => (await w.sql(`SELECT * FROM {o}.proposed_actions WHERE id = $1`, [id]))[0]!,
    enrollmentRow: async (id: string) => (await w.sql(`SELECT * FROM {o}.enrollments WHERE id = $1`, [id]))[0]!,
    outboxEvent: async (eventId: string) => (await w.sql(`SELECT payload FROM {o}.outbox_events WHERE event_id = $1`, [eventId]))[0]?.payload,
  };
}
