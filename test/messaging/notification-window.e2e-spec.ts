import { soon, startWireWorld, type WireWorld } from '../outbox/wire-world.js';

const HOUR_S = 3600;

/**
 * WhatsApp notifications and the 24-hour customer-service window (Meta's Cloud API: outside it only
 * an approved template may go; free text is refused with 131047). The sandbox's Meta enforces the
 * window from the inbound messages it simulated, so what reached it proves the choice at the wire:
 * the template outside the window, the text inside it, and nothing at all — a typed failure on the
 * delivery at creation — when the notification names no WhatsApp template.
 */
describe('WhatsApp notifications and the 24-hour window', () => {
  let w: WireWorld;
  let phoneSeq = 0;
  const m = (table: string) => `"${w.world.schema('messaging')}".${table}`;

  beforeAll(async () => {
    w = await startWireWorld('messaging_notification_window');
    const gatewayUrl = (await w.gateway.getUrl()).replace('[::1]', '127.0.0.1');
    await w.sandbox.post('/sandbox/meta/settings', { service_window: true, webhook_url: `${gatewayUrl}/webhooks/meta` });
    const put = (key: string, json: unknown) => w.http('PUT', `/notification-templates/${key}`, { secret: w.key.secret, json });
    expect(
      (
        await put('payment_received', {
          title: 'Pagamento',
          body: 'Olá {{name}}, recebemos {{amount}}.',
          whatsapp_template: { name: 'payment_received', language: 'pt_BR', parameters: ['name', 'amount'] },
        })
      ).status,
    ).toBeLessThan(300);
    expect((await put('welcome', { body: 'Bem-vindo, {{name}}!' })).status).toBeLessThan(300);
  }, 90_000);
  afterAll(() => w.close());

  /** A new contact with a WhatsApp number; answers its id and wa_id. */
  async function contact(): Promise<{ id: string; waId: string }> {
    const waId = `55929888830${String(++phoneSeq).padStart(2, '0')}`;
    const res = await w.http('POST', '/contacts', { secret: w.key.secret, json: { name: 'Ana Example', phone: `+${waId}` } });
    expect(res.status).toBe(201);
    return { id: res.body.id, waId };
  }

  /** The person writes to the business number at `timestamp` (epoch s), through the sandbox's Meta; waits until messaging stored it. */
  async function inbound(waId: string, timestamp: number): Promise<void> {
    const delivery = await w.sandbox.post<{ status: number; message_id: string }>('/sandbox/meta/inbound', { from: waId, text: 'oi', timestamp });
    expect(delivery.status).toBe(200);
    await soon(async () => (await w.world.sql(`SELECT 1 FROM ${m('messages')} WHERE external_id = $1 AND direction = 'inbound'`, [delivery.message_id])).length === 1);
  }

  const notify = (contactId: string, json: Record<string, unknown>) => w.http('POST', '/notifications', { secret: w.key.secret, json: { contact_id: contactId, channels: ['whatsapp'], ...json } });
  const deliveryOf = async (notificationId: string) => (await w.http('GET', `/notifications/${notificationId}`, { secret: w.key.secret })).body.deliveries.find((d: { channel: string }) => d.channel === 'whatsapp');

  it('sends the approved template, with the variables as body parameters in order, when the contact last wrote 25 hours ago', async () => {
    const c = await contact();
    await inbound(c.waId, Math.floor(Date.now() / 1000) - 25 * HOUR_S);
    const created = await notify(c.id, { template_key: 'payment_received', variables: { amount: 'R$ 10,00', name: 'Ana' } });
    expect(created.status).toBe(201);
    expect(created.body.deliveries[0]).toMatchObject({ channel: 'whatsapp', status: 'pending', error_code: null });
    await soon(async () => (await w.entriesOf(created.body.deliveries[0].message_id)).length === 1);
    await soon(async () => {
      await w.drain(2);
      return (await w.sandbox.received(c.waId)).length > 0;
    });

    const calls = await w.sandbox.received(c.waId);
    expect(calls).toHaveLength(1);
    expect(calls[0]).toMatchObject({ outcome: 'accepted', context: { type: 'template' } });
    expect(calls[0]!.body).toMatchObject({
      type: 'template',
      to: `+${c.waId}`,
      template: {
        name: 'payment_received',
        language: { code: 'pt_BR' },
        components: [
          {
            type: 'body',
            parameters: [
              { type: 'text', text: 'Ana' },
              { type: 'text', text: 'R$ 10,00' },
            ],
          },
        ],
      },
    });
    expect(calls[0]!.body).not.toHaveProperty('text');
    await soon(async () => (await deliveryOf(created.body.id)).status === 'sent');
  });

  it('sends the text when the contact wrote within the last 24 hours', async () => {
    const c = await contact();
    await inbound(c.waId, Math.floor(Date.now() / 1000) - 60);
    const created = await notify(c.id, { template_key: 'payment_received', variables: { amount: 'R$ 5,00', name: 'Bruno' } });
    expect(created.status).toBe(201);
    await soon(async () => (await w.entriesOf(created.body.deliveries[0].message_id)).length === 1);
    await soon(async () => {
      await w.drain(2);
      return (await w.sandbox.received(c.waId)).length > 0;
    });

    const [call] = await w.sandbox.received(c.waId);
    expect(call).toMatchObject({ outcome: 'accepted', body: { type: 'text', text: { body: 'Pagamento\n\nOlá Bruno, recebemos R$ 5,00.' } } });
    await soon(async () => (await deliveryOf(created.body.id)).status === 'sent');
  });

  it('fails the WhatsApp delivery at creation with whatsapp_template_required when the window is closed and the template names no WhatsApp template; nothing is queued, the other channels go on', async () => {
    const c = await contact();
    const created = await notify(c.id, { template_key: 'welcome', variables: { name: 'Carla' }, channels: ['whatsapp', 'in_app'] });
    expect(created.status).toBe(201);
    const byChannel = Object.fromEntries(created.body.deliveries.map((d: { channel: string }) => [d.channel, d]));
    expect(byChannel.whatsapp).toMatchObject({ status: 'failed', error_code: 'whatsapp_template_required', message_id: null });
    expect(byChannel.in_app).toMatchObject({ status: 'sent' });

    expect(await w.world.sql(`SELECT id FROM ${m('messages')} WHERE contact_id = $1`, [c.id])).toEqual([]);
    expect(await w.world.sql(`SELECT id FROM "${w.world.schema('outbox-dispatcher')}".message_outbox WHERE pacing_key = $1`, [c.waId])).toEqual([]);
    await w.drain(1);
    expect(await w.sandbox.received(c.waId)).toEqual([]);
    expect(await deliveryOf(created.body.id)).toMatchObject({ status: 'failed', error_code: 'whatsapp_template_required' });
  });

  it("has the sandbox's Meta refuse free text outside the window with 131047, as Meta does", async () => {
    const c = await contact();
    // Straight to the dispatcher, past messaging's choice: what the wire does with a late text.
    await w.d.enqueue.enqueue({ organization_id: w.org, channel: 'whatsapp', to: `+${c.waId}`, idempotency_key: `late-text:${c.waId}`, payload: { type: 'text', body: 'texto livre' }, requester: 'test' });
    await w.drain(1);
    const [call] = await w.sandbox.received(c.waId);
    expect(call).toMatchObject({ outcome: 'error_131047', body: { type: 'text' } });
  });
});
