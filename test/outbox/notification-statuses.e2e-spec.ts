import { randomUUID } from 'node:crypto';
import { soon, startWireWorld, statusWebhook, type WireWorld } from './wire-world.js';

/**
 * A notification delivery follows what Meta reports after the send (seed 004 "Notification
 * delivery status"): Meta usually accepts a send (`sent`) and reports the failure later, so a
 * `failed` status moves a `sent` delivery to `failed` with Meta's code, while statuses that arrive
 * out of order never move a message or its delivery back. Signed status webhooks through the
 * gateway; the send itself goes to the sandbox.
 */
describe('notification deliveries and later provider statuses', () => {
  let w: WireWorld;
  let phoneSeq = 0;
  const m = (table: string) => `"${w.world.schema('messaging')}".${table}`;

  beforeAll(async () => {
    w = await startWireWorld('outbox_notification_statuses');
    // The contacts never wrote (their 24-hour window is closed): the approved WhatsApp template goes.
    const put = await w.http('PUT', '/notification-templates/login_code', { secret: w.key.secret, json: { body: 'Seu código é {{code}}', whatsapp_template: { name: 'login_code', language: 'pt_BR', parameters: ['code'] } } });
    expect(put.status).toBe(200);
  }, 90_000);
  afterAll(() => w.close());

  /** A WhatsApp notification to a new contact, sent to the sandbox; answers its ids and the wamid Meta gave it. */
  async function sentNotification(): Promise<{ notificationId: string; messageId: string; waId: string; wamid: string }> {
    const waId = `55929888820${String(++phoneSeq).padStart(2, '0')}`;
    const contact = await w.http('POST', '/contacts', { secret: w.key.secret, json: { name: 'Caio Example', phone: `+${waId}` } });
    expect(contact.status).toBe(201);
    const created = await w.http('POST', '/notifications', { secret: w.key.secret, json: { contact_id: contact.body.id, template_key: 'login_code', variables: { code: randomUUID().slice(0, 4) }, channels: ['whatsapp'] } });
    expect(created.status).toBe(201);
    const messageId = created.body.deliveries[0].message_id as string;
    await soon(async () => (await w.entriesOf(messageId)).length === 1);
    await w.drain(1);
    const [call] = await w.sandbox.received(waId);
    expect(call).toMatchObject({ outcome: 'accepted' });
    await soon(async () => (await delivery(created.body.id)).status === 'sent');
    return { notificationId: created.body.id, messageId, waId, wamid: call!.provider_id! };
  }
  const delivery = async (notificationId: string) => (await w.http('GET', `/notifications/${notificationId}`, { secret: w.key.secret })).body.deliveries[0] as { status: string; error_code: string | null };
  const message = async (messageId: string) => (await w.world.sql<{ status: string; error_code: string | null; delivered_at: Date | null }>(`SELECT status, error_code, delivered_at FROM ${m('messages')} WHERE id = $1`, [messageId]))[0]!;
  /** Posts the statuses in this order, one signed webhook each, and waits until messaging applied them all. */
  async function report(n: { waId: string; wamid: string }, statuses: ('sent' | 'delivered' | 'read' | 'failed')[]): Promise<void> {
    const t = Math.floor(Date.now() / 1000);
    for (const [i, s] of statuses.entries()) expect((await w.meta(statusWebhook(n.wamid, n.waId, s, t + i))).status).toBe(200);
    await soon(async () => {
      const [{ count }] = await w.world.sql<{ count: number }>(`SELECT count(*)::int AS count FROM ${m('inbox_events')} WHERE handler = 'OutcomesConsumer.onProviderStatus' AND event_id LIKE $1`, [`outbox.provider_status.recorded:${n.wamid}:%`]);
      return count === statuses.length;
    });
  }

  it('moves a sent delivery to failed with the provider code when Meta reports sent, then failed', async () => {
    const n = await sentNotification();
    await report(n, ['sent', 'failed']);
    expect(await delivery(n.notificationId)).toMatchObject({ status: 'failed', error_code: '131026' });
    expect(await message(n.messageId)).toMatchObject({ status: 'failed', error_code: '131026' });
    const updates = await w.world.sql<{ status: string }>(`SELECT payload->'data'->>'status' AS status FROM ${m('outbox_events')} WHERE type = 'messaging.notification.delivery_updated' AND payload->'data'->>'message_id' = $1 ORDER BY id`, [n.messageId]);
    expect(updates.map((u) => u.status)).toEqual(['sent', 'failed']);
  });

  it('keeps a delivered message and its sent delivery when a failed status arrives after delivered (and a late sent after it)', async () => {
    const n = await sentNotification();
    await report(n, ['delivered', 'failed', 'sent']);
    expect(await delivery(n.notificationId)).toMatchObject({ status: 'sent', error_code: null });
    expect(await message(n.messageId)).toMatchObject({ status: 'delivered', error_code: null });
  });

  it('never brings a failed delivery back to sent when sent and read arrive after failed', async () => {
    const n = await sentNotification();
    await report(n, ['failed', 'sent', 'read']);
    expect(await delivery(n.notificationId)).toMatchObject({ status: 'failed', error_code: '131026' });
    expect((await message(n.messageId)).status).toBe('failed');
  });
});
