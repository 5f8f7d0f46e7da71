import { randomUUID } from 'node:crypto';
import { MessagingEvents, OutboxEvents } from '@touchpoint/contracts';
import { publishEvent } from '@touchpoint/testing';
import { inboundWebhook, soon, startWireWorld, type WireWorld } from './wire-world.js';

/**
 * "Stop means stop on every channel" (seed 003 §4.7, §5; DESIGN §4): a contact's STOP on WhatsApp
 * becomes a suppression of each of its addresses at the dispatcher, which cancels what was queued
 * to them and refuses every later send, whoever asks (notifications, operator sends). Driven
 * through the gateway with signed Meta webhooks; the wire is the sandbox.
 */
describe('an opt-out on WhatsApp suppresses the contact at the dispatcher', () => {
  let w: WireWorld;
  const o = (table: string) => `"${w.world.schema('outbox-dispatcher')}".${table}`;
  const m = (table: string) => `"${w.world.schema('messaging')}".${table}`;

  beforeAll(async () => {
    w = await startWireWorld('outbox_opt_out');
  }, 90_000);
  afterAll(() => w.close());

  /** A contact writes in; answers its contact and conversation ids, with `email` set over REST. */
  async function contactWrites(waId: string, email: string): Promise<{ contactId: string; conversationId: string }> {
    const text = `Oi, uma dúvida ${randomUUID().slice(0, 6)}`;
    expect((await w.meta(inboundWebhook(waId, text))).status).toBe(200);
    const [row] = await soon(async () => {
      const rows = await w.world.sql<{ contact_id: string; conversation_id: string }>(`SELECT contact_id, conversation_id FROM ${m('messages')} WHERE body = $1`, [text]);
      return rows.length ? rows : undefined;
    });
    expect((await w.http('PATCH', `/contacts/${row!.contact_id}`, { secret: w.key.secret, json: { email } })).status).toBe(200);
    return { contactId: row!.contact_id, conversationId: row!.conversation_id };
  }
  const operatorSend = async (conversationId: string, text: string) => {
    const res = await w.http('POST', `/conversations/${conversationId}/messages`, { secret: w.key.secret, json: { idempotency_key: randomUUID(), text } });
    expect(res.status).toBe(201);
    return res.body.message_id as string;
  };
  const notify = async (contactId: string, channels: string[]) => {
    const res = await w.http('POST', '/notifications', { secret: w.key.secret, json: { contact_id: contactId, title: 'Pedido', body: `Seu pedido saiu ${randomUUID().slice(0, 4)}`, channels } });
    expect(res.status).toBe(201);
    return res.body as { id: string; deliveries: { channel: string; message_id: string | null; status: string; error_code: string | null }[] };
  };
  const queued = async (messageId: string) => soon(async () => (await w.entriesOf(messageId))[0]);
  const messageOf = async (conversationId: string, messageId: string) =>
    ((await w.http('GET', `/conversations/${conversationId}/messages?limit=50`, { secret: w.key.secret })).body.items as { id: string; status: string; error_code: string | null }[]).find((x) => x.id === messageId)!;

  it('cancels what was queued before the STOP and sends nothing afterwards on WhatsApp or email, while another contact still gets hers', async () => {
    const waId = '5592988881101';
    const email = `ana.${randomUUID().slice(0, 6)}@example.com`;
    const who = await contactWrites(waId, email);
    const otherEmail = `bia.${randomUUID().slice(0, 6)}@example.com`;
    const other = await contactWrites('5592988881102', otherEmail);
    await w.drain(); // the inbound messages' read receipts leave first
    await w.sandbox.reset();

    // Queued before the STOP and held (the send lane does not run): an operator's text and an email notification.
    const heldText = await operatorSend(who.conversationId, 'Tudo certo com o pedido?');
    const heldEmail = (await notify(who.contactId, ['email'])).deliveries[0]!;
    const heldEntries = [await queued(heldText), await queued(heldEmail.message_id!)];
    expect(heldEntries.map((e) => e.status)).toEqual(['pending', 'pending']);

    const ack = await w.meta(inboundWebhook(waId, 'STOP'));
    expect(ack.status).toBe(200);
    const suppressions = await soon(async () => {
      const rows = await w.world.sql<{ channel: string; value: string; reason: string }>(`SELECT channel, value, reason FROM ${o('contact_suppressions')} WHERE organization_id = $1 ORDER BY channel`, [w.org]);
      return rows.length === 2 ? rows : undefined;
    });
    expect(suppressions).toEqual([
      { channel: 'email', value: email, reason: 'opt_out' },
      { channel: 'whatsapp', value: waId, reason: 'opt_out' },
    ]);

    // The held sends were cancelled with the suppression, and every requester is told why.
    for (const entry of heldEntries) {
      const [row] = await w.world.sql<Record<string, unknown>>(`SELECT status, last_error_code, attempts FROM ${o('message_outbox')} WHERE id = $1`, [entry.id]);
      expect(row).toEqual({ status: 'cancelled', last_error_code: 'suppressed', attempts: 0 });
      const [event] = await w.world.sql<{ payload: { data: unknown } }>(`SELECT payload FROM ${o('outbox_events')} WHERE type = $1 AND payload->'data'->>'entry_id' = $2`, [OutboxEvents.EntryCancelled, entry.id]);
      expect(event!.payload.data).toMatchObject({ reason: 'suppressed', error_code: 'suppressed' });
    }
    await soon(async () => (await messageOf(who.conversationId, heldText))?.status === 'cancelled');
    expect(await messageOf(who.conversationId, heldText)).toMatchObject({ status: 'cancelled', error_code: 'suppressed' });

    // After the STOP: notifications on both channels and an operator's text, to her and (control) to the other contact.
    const after = await notify(who.contactId, ['whatsapp', 'email']);
    const afterText = await operatorSend(who.conversationId, 'Podemos ajudar em algo mais?');
    const control = await notify(other.contactId, ['whatsapp', 'email']);
    for (const id of control.deliveries.map((x) => x.message_id!)) await queued(id);
    await w.drain(4);

    expect(await w.sandbox.received(waId)).toEqual([]);
    expect(await w.emailsTo(email)).toEqual([]);
    expect(await w.sandbox.received('5592988881102')).toHaveLength(1);
    expect(await w.emailsTo(otherEmail)).toHaveLength(1);
    // The contact opted out, so messaging refuses them before anything is queued: a failure the
    // requester sees (the message and the notification deliveries say why), and no outbox entry.
    expect(await w.entriesOf(afterText)).toEqual([]);
    expect(await messageOf(who.conversationId, afterText)).toMatchObject({ status: 'failed', error_code: 'opted_out' });
    await soon(async () => {
      const view = (await w.http('GET', `/notifications/${after.id}`, { secret: w.key.secret })).body;
      return view.deliveries.every((x: { status: string }) => x.status === 'failed') ? view : undefined;
    });
  }, 120_000);

  it('stops every send to an opted-out contact, on an address added after the STOP too (not on the list)', async () => {
    const waId = '5592988881103';
    const who = await contactWrites(waId, `cai.${randomUUID().slice(0, 6)}@example.com`);
    expect((await w.meta(inboundWebhook(waId, 'Stop please'))).status).toBe(200);
    await soon(async () => (await w.world.sql(`SELECT 1 FROM ${m('contacts')} WHERE id = $1 AND opted_out_at IS NOT NULL`, [who.contactId])).length === 1);
    const later = `cai.new.${randomUUID().slice(0, 6)}@example.com`;
    const laterPhone = '5592988881104';
    expect((await w.http('PATCH', `/contacts/${who.contactId}`, { secret: w.key.secret, json: { email: later, phone: `+${laterPhone}` } })).status).toBe(200);
    const sent = await notify(who.contactId, ['email', 'whatsapp']);
    await w.drain(2);
    expect(await w.emailsTo(later)).toEqual([]);
    expect(await w.sandbox.received(laterPhone)).toEqual([]);
    expect(sent.deliveries.map((x) => x.status).sort()).toEqual(['failed', 'failed']);
    expect(sent.deliveries.map((x) => x.error_code)).toEqual(['opted_out', 'opted_out']);
    for (const delivery of sent.deliveries) expect(await w.entriesOf(delivery.message_id!)).toEqual([]);
  }, 60_000);

  it('takes the same request twice (a duplicate delivery, a second event for the address) as one suppression', async () => {
    const value = '5592988881199';
    const data = { contact_id: randomUUID(), channel: 'whatsapp', value: `+${value}`, reason: 'opt_out' };
    await publishEvent(w.world, MessagingEvents.SuppressionRequested, w.org, data, { eventId: `messaging.suppression.requested:dup:${value}` });
    await publishEvent(w.world, MessagingEvents.SuppressionRequested, w.org, data, { eventId: `messaging.suppression.requested:dup:${value}` });
    await publishEvent(w.world, MessagingEvents.SuppressionRequested, w.org, { ...data, value }, { eventId: `messaging.suppression.requested:other:${value}` });
    await soon(async () => {
      const [{ n }] = await w.world.sql<{ n: number }>(`SELECT count(*)::int AS n FROM ${o('inbox_events')} WHERE handler = 'SuppressionsConsumer.onSuppressionRequested' AND event_id LIKE $1`, [`%:${value}`]);
      return n === 2;
    });
    expect(await w.world.sql(`SELECT value FROM ${o('contact_suppressions')} WHERE organization_id = $1 AND value = $2`, [w.org, value])).toEqual([{ value }]);
  });
});
