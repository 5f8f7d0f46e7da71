import { randomUUID } from 'node:crypto';
import { AbuseEvents, type WhatsAppInboundBatch } from '@touchpoint/contracts';
import { eventually, publishEvent, type TestWorld } from '@touchpoint/testing';

/** The business number of the fixtures (fixtures/README: phone-number id 100000000000002). */
export const PHONE_NUMBER_ID = '100000000000002';

/** One inbound text message as Meta sends it in `value` (fixtures/meta/webhook-message-text.json). */
export function inboundText(wamid: string, from: string, text: string, timestampSeconds: number, phoneNumberId = PHONE_NUMBER_ID): WhatsAppInboundBatch {
  return {
    phone_number_id: phoneNumberId,
    display_phone_number: '5511912345678',
    contacts: [{ wa_id: from, profile: { name: 'Ana Example' } }],
    messages: [{ from, id: wamid, timestamp: String(timestampSeconds), type: 'text', text: { body: text } }],
  };
}

export const newWamid = () => `wamid.${randomUUID().replace(/-/g, '')}`;

/** Registers a WhatsApp number for an organization in messaging's sender read model. */
export async function registerSender(world: TestWorld, organizationId: string, phoneNumberId = PHONE_NUMBER_ID): Promise<void> {
  await world.sql(
    `INSERT INTO "${world.schema('messaging')}".whatsapp_senders (phone_number_id, organization_id, sender_id, status, updated_at) VALUES ($1, $2, $3, 'connected', now())
     ON CONFLICT (phone_number_id) DO UPDATE SET organization_id = EXCLUDED.organization_id`,
    [phoneNumberId, organizationId, `sender-${organizationId}`],
  );
}

/** Gives an organization its own limits in the abuse schema (high rates, a small instance cap). */
export async function setLimits(world: TestWorld, organizationId: string, limits: { per_minute?: number; per_hour?: number; per_day?: number; per_instance?: number }): Promise<void> {
  await world.sql(
    `INSERT INTO "${world.schema('abuse')}".rate_limit_config (organization_id, channel, user_type, per_minute, per_hour, per_day, per_instance)
     VALUES ($1, '*', 'all', $2, $3, $4, $5)`,
    [organizationId, limits.per_minute ?? 1000, limits.per_hour ?? 10_000, limits.per_day ?? 100_000, limits.per_instance ?? 500],
  );
}

/** Outbox rows of a service, by type, oldest first. */
export async function outboxEvents<T = Record<string, unknown>>(world: TestWorld, service: 'messaging' | 'abuse', type: string): Promise<{ event_id: string; payload: { data: T; organization_id: string } }[]> {
  return world.sql(`SELECT event_id, payload FROM "${world.schema(service)}".outbox_events WHERE type = $1 ORDER BY id`, [type]);
}

/** An abuse action as `abuse.action.applied` carries it. */
export interface AbuseActionFixture {
  action_id: string;
  organization_id: string;
  contact_id: string;
  conversation_id: string | null;
  action_type: 'block' | 'suspension' | 'throttle';
  offense_number: number;
  reason: string;
  starts_at: string;
  expires_at: string;
  status: 'active' | 'expired';
}

/**
 * Puts a restriction in force in messaging's event-fed copy the way production does (an
 * `abuse.action.applied` event from the abuse service) and waits until messaging stored it.
 * @param forMs how long it lasts from now, ms
 */
export async function restrictInReadModel(world: TestWorld, who: { organization_id: string; contact_id: string; conversation_id?: string | null }, type: AbuseActionFixture['action_type'], forMs: number): Promise<AbuseActionFixture> {
  const action: AbuseActionFixture = {
    action_id: randomUUID(),
    organization_id: who.organization_id,
    contact_id: who.contact_id,
    conversation_id: who.conversation_id ?? null,
    action_type: type,
    offense_number: type === 'throttle' ? 3 : 5,
    reason: type === 'throttle' ? 'flooding' : 'spam',
    starts_at: new Date().toISOString(),
    expires_at: new Date(Date.now() + forMs).toISOString(),
    status: 'active',
  };
  await publishEvent(world, AbuseEvents.ActionApplied, who.organization_id, { action });
  await eventually(async () => (await world.sql(`SELECT 1 FROM "${world.schema('messaging')}".abuse_restrictions WHERE action_id = $1`, [action.action_id])).length === 1);
  return action;
}
