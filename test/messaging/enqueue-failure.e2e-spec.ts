import { randomUUID } from 'node:crypto';
import { inboundWebhook, soon, startWireWorld, type WireWorld } from '../outbox/wire-world.js';

/**
 * An enqueue failure throws at the call site (seed 004 "Enqueue before wire"): a send whose
 * payload the dispatcher would refuse is answered 4xx with the reason through the gateway, and
 * nothing is left behind — no message row, no outbox entry, nothing at the sandbox — instead of a
 * 201 `queued` that fails later. Messaging runs the dispatcher's own payload rules
 * (`validateOutboxPayload`, libs/contracts).
 */
describe('enqueue failure at the call site', () => {
  let w: WireWorld;
  let phoneSeq = 0;
  const m = (table: string) => `"${w.world.schema('messaging')}".${table}`;
  const outbox = () => `"${w.world.schema('outbox-dispatcher')}".message_outbox`;

  beforeAll(async () => {
    w = await startWireWorld('messaging_enqueue_failure');
  }, 90_000);
  afterAll(() => w.close());

  /** A contact who wrote on WhatsApp (its window is open): answers its ids. */
  async function conversation(): Promise<{ contactId: string; conversationId: string; waId: string }> {
    const waId = `55929888840${String(++phoneSeq).padStart(2, '0')}`;
    expect((await w.meta(inboundWebhook(waId, 'oi'))).status).toBe(200);
    const [row] = await soon(async () => {
      const rows = await w.world.sql<{ contact_id: string; conversation_id: string }>(`SELECT contact_id, conversation_id FROM ${m('messages')} WHERE direction = 'inbound' AND contact_id IN (SELECT id FROM ${m('contacts')} WHERE phone = $1)`, [`+${waId}`]);
      return rows.length ? rows : undefined;
    });
    return { contactId: row!.contact_id, conversationId: row!.conversation_id, waId };
  }

  /** Nothing of a send was kept: no message row under the key, no outbox entry, no Meta call after draining. */
  async function expectNothingQueued(idempotencyKey: string, waId: string): Promise<void> {
    expect(await w.world.sql(`SELECT id FROM ${m('messages')} WHERE idempotency_key = $1`, [idempotencyKey])).toEqual([]);
    expect(await w.world.sql(`SELECT id FROM ${outbox()} WHERE idempotency_key = $1`, [idempotencyKey])).toEqual([]);
    expect(await w.world.sql(`SELECT id FROM ${m('outbox_events')} WHERE type = 'outbox.enqueue' AND payload->'data'->>'idempotency_key' = $1`, [idempotencyKey])).toEqual([]);
    await w.drain(2);
    expect(await w.sandbox.received(waId)).toEqual([]);
  }

  const operatorSend = (conversationId: string, json: Record<string, unknown>) => w.http('POST', `/conversations/${conversationId}/messages`, { secret: w.key.secret, json });

  it('answers 400 invalid_payload for an operator media send with an ftp:// link, and queues nothing', async () => {
    const c = await conversation();
    const key = `ftp-${randomUUID()}`;
    const res = await operatorSend(c.conversationId, { idempotency_key: key, media: { media_type: 'image', link: 'ftp://files.example.com/a.png' } });
    expect(res.status).toBe(400);
    expect(res.body.error).toMatchObject({ code: 'invalid_payload', details: { errors: expect.arrayContaining([expect.stringMatching(/link must be an http\(s\) URL/)]) } });
    await expectNothingQueued(`operator:${key}`, c.waId);
  });

  it('answers 400 invalid_payload for an operator template send with a component type WhatsApp does not have, and queues nothing', async () => {
    const c = await conversation();
    const key = `component-${randomUUID()}`;
    const res = await operatorSend(c.conversationId, { idempotency_key: key, template: { name: 'order_update', language: 'pt_BR', components: [{ type: 'sidebar', parameters: [] }] } });
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe('invalid_payload');
    expect(JSON.stringify(res.body.error.details.errors)).toMatch(/components\[0\]/);
    await expectNothingQueued(`operator:${key}`, c.waId);
  });

  it('answers 400 invalid_payload for an operator template send whose text parameter Meta refuses (132018, 131008), and queues nothing', async () => {
    const c = await conversation();
    for (const [text, problem] of [
      ['Ana\nSouza', /newline or a tab/],
      ['Ana     Souza', /more than 4 consecutive spaces/],
      ['', /must not be empty/],
    ] as const) {
      const key = `param-${randomUUID()}`;
      const res = await operatorSend(c.conversationId, { idempotency_key: key, template: { name: 'order_update', language: 'pt_BR', components: [{ type: 'body', parameters: [{ type: 'text', text }] }] } });
      expect(res.status).toBe(400);
      expect(res.body.error).toMatchObject({ code: 'invalid_payload', details: { errors: expect.arrayContaining([expect.stringMatching(problem)]) } });
      await expectNothingQueued(`operator:${key}`, c.waId);
    }
  });

  it('still queues a valid operator send (the check refuses only what the dispatcher would)', async () => {
    const c = await conversation();
    const key = `ok-${randomUUID()}`;
    const res = await operatorSend(c.conversationId, { idempotency_key: key, media: { media_type: 'image', link: 'https://files.example.com/a.png' } });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({ status: 'queued' });
    await soon(async () => (await w.world.sql(`SELECT id FROM ${outbox()} WHERE idempotency_key = $1`, [`operator:${key}`])).length === 1);
  });

  it('answers 400 invalid_payload when a notification would send a WhatsApp template the dispatcher refuses, and writes nothing', async () => {
    const c = await conversation();
    // A template stored before the rules it breaks (a language code Meta has no such form of).
    await w.world.sql(`INSERT INTO ${m('notification_templates')} (organization_id, key, title, body, whatsapp_template, created_at, updated_at) VALUES ($1, 'old_reminder', NULL, 'Lembrete: {{what}}', $2, now(), now())`, [
      w.org,
      JSON.stringify({ name: 'old_reminder', language: 'Portuguese (Brazil)', parameters: ['what'] }),
    ]);
    // The contact's window is closed (the inbound above is moved back 25 hours), so the template is what would go.
    await w.world.sql(`UPDATE ${m('messages')} SET provider_timestamp = now() - interval '25 hours', created_at = now() - interval '25 hours' WHERE contact_id = $1`, [c.contactId]);
    const key = `n-${randomUUID()}`;
    const res = await w.http('POST', '/notifications', { secret: w.key.secret, json: { contact_id: c.contactId, template_key: 'old_reminder', variables: { what: 'consulta' }, channels: ['whatsapp', 'in_app'], idempotency_key: key } });
    expect(res.status).toBe(400);
    expect(res.body.error).toMatchObject({ code: 'invalid_payload', details: { errors: expect.arrayContaining([expect.stringMatching(/language/)]) } });
    expect(await w.world.sql(`SELECT id FROM ${m('notifications')} WHERE idempotency_key = $1`, [key])).toEqual([]);
    expect(await w.world.sql(`SELECT id FROM ${m('messages')} WHERE contact_id = $1 AND direction = 'outbound'`, [c.contactId])).toEqual([]);
    expect(await w.world.sql(`SELECT id FROM ${outbox()} WHERE pacing_key = $1 AND payload_type <> 'read_receipt'`, [c.waId])).toEqual([]);
  });

  it('answers 400 invalid_payload when a notification template names a WhatsApp template Meta would refuse, and stores nothing', async () => {
    const res = await w.http('PUT', '/notification-templates/shipping', { secret: w.key.secret, json: { body: 'Enviado: {{code}}', whatsapp_template: { name: 'Shipping Update', language: 'pt_BR', parameters: ['code'] } } });
    expect(res.status).toBe(400);
    expect(res.body.error).toMatchObject({ code: 'invalid_payload', details: { errors: expect.arrayContaining([expect.stringMatching(/name/)]) } });
    const list = await w.http('GET', '/notification-templates', { secret: w.key.secret });
    expect(list.body.items.map((t: { key: string }) => t.key)).not.toContain('shipping');
  });

  it('answers 400 invalid_payload when a notification variable fills a template parameter with a tab, window open or not, and writes nothing', async () => {
    const put = await w.http('PUT', '/notification-templates/visit_tab', { secret: w.key.secret, json: { body: 'Visita: {{when}}', whatsapp_template: { name: 'visit_reminder', language: 'pt_BR', parameters: ['when'] } } });
    expect(put.status).toBeLessThan(300);
    // The window is open (the contact just wrote), so the text would go now; the same request must not pass today and fail tomorrow.
    const c = await conversation();
    const key = `tab-${randomUUID()}`;
    const res = await w.http('POST', '/notifications', { secret: w.key.secret, json: { contact_id: c.contactId, template_key: 'visit_tab', variables: { when: 'amanhã\t10h' }, channels: ['whatsapp', 'in_app'], idempotency_key: key } });
    expect(res.status).toBe(400);
    expect(res.body.error).toMatchObject({ code: 'invalid_payload', details: { errors: expect.arrayContaining([expect.stringMatching(/newline or a tab/)]) } });
    expect(await w.world.sql(`SELECT id FROM ${m('notifications')} WHERE idempotency_key = $1`, [key])).toEqual([]);
    expect(await w.world.sql(`SELECT id FROM ${m('messages')} WHERE contact_id = $1 AND direction = 'outbound'`, [c.contactId])).toEqual([]);
  });

  it('answers 400 validation_failed naming variables.<name> when a notification variable is an object or an array, and writes nothing', async () => {
    const c = await conversation();
    const key = `obj-${randomUUID()}`;
    const res = await w.http('POST', '/notifications', { secret: w.key.secret, json: { contact_id: c.contactId, template_key: 'visit_tab', variables: { when: { x: 1 }, name: [1, 2] }, channels: ['whatsapp'], idempotency_key: key } });
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe('validation_failed');
    expect(JSON.stringify(res.body.error)).toMatch(/variables\.when/);
    expect(JSON.stringify(res.body.error)).toMatch(/variables\.name/);
    expect(await w.world.sql(`SELECT id FROM ${m('notifications')} WHERE idempotency_key = $1`, [key])).toEqual([]);
    expect(await w.world.sql(`SELECT id FROM ${m('messages')} WHERE contact_id = $1 AND direction = 'outbound'`, [c.contactId])).toEqual([]);
  });

  it("answers 400 validation_failed for an operator WhatsApp text of 4,097 code points (Meta's 4,096), counting an emoji as one, and queues nothing", async () => {
    const c = await conversation();
    const key = `wa-long-${randomUUID()}`;
    // 4,096 emoji are 8,192 UTF-16 units but 4,096 code points: one more letter is one too many.
    const res = await operatorSend(c.conversationId, { idempotency_key: key, text: `${'\u{1F600}'.repeat(4096)}x` });
    expect(res.status).toBe(400);
    expect(res.body.error).toMatchObject({ code: 'validation_failed', details: { field: 'text', max: 4096 } });
    expect(res.body.error.message).toMatch(/4096 characters on whatsapp/);
    expect(await w.world.sql(`SELECT id FROM ${m('messages')} WHERE idempotency_key LIKE $1`, [`%${key}`])).toEqual([]);
  });

  it('answers 400 validation_failed when a notification text is longer than WhatsApp takes, and writes nothing', async () => {
    const c = await conversation();
    const key = `long-${randomUUID()}`;
    const res = await w.http('POST', '/notifications', { secret: w.key.secret, json: { contact_id: c.contactId, title: 't'.repeat(150), body: 'b'.repeat(4000), channels: ['whatsapp'], idempotency_key: key } });
    expect(res.status).toBe(400);
    expect(res.body.error.message).toMatch(/4096/);
    expect(await w.world.sql(`SELECT id FROM ${m('notifications')} WHERE idempotency_key = $1`, [key])).toEqual([]);
    expect(await w.world.sql(`SELECT id FROM ${m('messages')} WHERE contact_id = $1 AND direction = 'outbound'`, [c.contactId])).toEqual([]);
  });
});
