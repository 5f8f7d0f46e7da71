import { jest } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import { IN_FLIGHT_WAIT_MS } from '../../apps/outbox-dispatcher/src/suppressions/suppressions.service.js';
import { inboundWebhook, soon, startWireWorld, type WireWorld } from './wire-world.js';

/**
 * An opt-out is in force at the wire when its webhook is acknowledged (DESIGN §5.3, seed 003 "stop
 * means stop"), not once messaging's receipt worker reaches it: the worker is held here
 * (`INBOUND_POLL_MS=0`), so everything these tests see comes from the acknowledgement alone. Before,
 * an operator send made right after the 200 reached the contact in 3 of 10 tries.
 */
describe('an opt-out webhook is acknowledged only once its address is suppressed', () => {
  let w: WireWorld;
  const o = (table: string) => `"${w.world.schema('outbox-dispatcher')}".${table}`;

  beforeAll(async () => {
    // Sends the sandbox holds below stay inside the send timeout: they are on the wire, not ambiguous.
    w = await startWireWorld('outbox_optout_ack', { INBOUND_POLL_MS: '0' }, { WHATSAPP_SEND_TIMEOUT_MS: '10000' });
    // The contact has not written yet (its 24-hour window is closed): WhatsApp notifications go as this template.
    const put = await w.http('PUT', '/notification-templates/order_shipped', { secret: w.key.secret, json: { title: 'Pedido', body: 'Seu pedido saiu', whatsapp_template: { name: 'order_shipped', language: 'pt_BR', parameters: [] } } });
    expect(put.status).toBe(200);
  }, 90_000);
  afterAll(() => w.close());

  it('marks the contact opted out, suppresses every address it has and cancels their queued sends before answering 200; a send made after the 200 never reaches the wire', async () => {
    const waId = '5592977770101';
    const email = `ana.${randomUUID().slice(0, 6)}@example.com`;
    const contact = await w.http('POST', '/contacts', { secret: w.key.secret, json: { name: 'Ana', phone: `+${waId}`, email } });
    expect(contact.status).toBe(201);
    const contactId = contact.body.id as string;
    const queuedBefore = await w.http('POST', '/notifications', { secret: w.key.secret, json: { contact_id: contactId, template_key: 'order_shipped', channels: ['whatsapp'] } });
    expect(queuedBefore.status).toBe(201);
    const heldId = queuedBefore.body.deliveries[0].message_id as string;
    await soon(async () => (await w.entriesOf(heldId))[0]?.status === 'pending');
    const heldEmail = await w.http('POST', '/notifications', { secret: w.key.secret, json: { contact_id: contactId, title: 'Pedido', body: 'Seu pedido por email', channels: ['email'] } });
    const heldEmailId = heldEmail.body.deliveries[0].message_id as string;
    await soon(async () => (await w.entriesOf(heldEmailId))[0]?.status === 'pending');

    const adds = jest.spyOn(w.d.suppressions, 'addInForce');
    expect((await w.meta(inboundWebhook(waId, 'PARE, obrigado'))).status).toBe(200);
    // One add per address: the number it came from and the contact's stored phone are the same one.
    expect(adds.mock.calls.map(([data]) => data.channel).sort()).toEqual(['email', 'whatsapp']);
    adds.mockRestore();
    // Nothing processed the message yet (the worker is held): these are the acknowledgement's doing.
    expect(await w.world.sql(`SELECT 1 FROM "${w.world.schema('messaging')}".messages WHERE body = 'PARE, obrigado'`)).toHaveLength(0);
    expect(await w.world.sql(`SELECT channel, value, reason FROM ${o('contact_suppressions')} WHERE organization_id = $1 ORDER BY channel`, [w.org])).toEqual([
      { channel: 'email', value: email, reason: 'opt_out' },
      { channel: 'whatsapp', value: waId, reason: 'opt_out' },
    ]);
    expect((await w.entriesOf(heldId))[0]!.status).toBe('cancelled');
    expect((await w.entriesOf(heldEmailId))[0]!.status).toBe('cancelled');
    expect((await w.world.sql<{ opted_out_at: Date | null }>(`SELECT opted_out_at FROM "${w.world.schema('messaging')}".contacts WHERE id = $1`, [contactId]))[0]!.opted_out_at).not.toBeNull();

    const after = await w.http('POST', '/notifications', { secret: w.key.secret, json: { contact_id: contactId, title: 'Pedido', body: `Outra coisa ${randomUUID().slice(0, 4)}`, channels: ['whatsapp'] } });
    expect(after.status).toBe(201);
    // The contact is already marked opted out: messaging refuses it before anything is queued.
    expect(after.body.deliveries).toMatchObject([{ channel: 'whatsapp', status: 'failed', error_code: 'opted_out' }]);
    expect(await w.entriesOf(after.body.deliveries[0].message_id)).toEqual([]);
    const afterEmail = await w.http('POST', '/notifications', { secret: w.key.secret, json: { contact_id: contactId, title: 'Pedido', body: 'Por email também', channels: ['email'] } });
    expect(afterEmail.body.deliveries).toMatchObject([{ channel: 'email', status: 'failed', error_code: 'opted_out' }]);
    await w.drain();
    expect(await w.sandbox.received(waId)).toEqual([]);
    expect(await w.emailsTo(email)).toEqual([]);
  });

  it('answers a webhook of several opt-outs, each with a send on the wire, within one wait for those sends, not one per opt-out', async () => {
    const waIds = ['5592977770111', '5592977770112', '5592977770113'];
    const held: string[] = [];
    for (const waId of waIds) {
      const contact = await w.http('POST', '/contacts', { secret: w.key.secret, json: { name: 'Bia', phone: `+${waId}` } });
      expect(contact.status).toBe(201);
      // The provider holds each send far longer than the dispatcher waits for one.
      await w.sandbox.fault({ kind: 'latency', latency_ms: 4 * IN_FLIGHT_WAIT_MS, match: { wa_id: waId } });
      const queued = await w.http('POST', '/notifications', { secret: w.key.secret, json: { contact_id: contact.body.id, template_key: 'order_shipped', channels: ['whatsapp'] } });
      expect(queued.status).toBe(201);
      held.push(queued.body.deliveries[0].message_id as string);
    }
    for (const id of held) await soon(async () => (await w.entriesOf(id))[0]?.status === 'pending');
    const draining = w.d.drain.drain(8000);
    const openAttempts = async () => (await w.world.sql(`SELECT 1 FROM ${o('message_outbox_attempts')} WHERE outcome = 'open'`)).length;
    await soon(async () => (await openAttempts()) === waIds.length);

    // One webhook, three people writing STOP.
    const webhook = inboundWebhook(waIds[0]!, 'STOP');
    const value = webhook.entry[0]!.changes[0]!.value as { messages: unknown[]; contacts?: unknown[] };
    for (const waId of waIds.slice(1)) {
      const other = inboundWebhook(waId, 'STOP').entry[0]!.changes[0]!.value as { messages: unknown[]; contacts?: unknown[] };
      value.messages.push(...other.messages);
      if (value.contacts && other.contacts) value.contacts.push(...other.contacts);
    }
    const askedAt = Date.now();
    expect((await w.meta(webhook)).status).toBe(200);
    const took = Date.now() - askedAt;
    // It waited for the sends on the wire (each up to IN_FLIGHT_WAIT_MS), all at once.
    expect(took).toBeGreaterThanOrEqual(IN_FLIGHT_WAIT_MS - 100);
    expect(took).toBeLessThan(2 * IN_FLIGHT_WAIT_MS);
    expect((await w.world.sql<{ value: string }>(`SELECT value FROM ${o('contact_suppressions')} WHERE organization_id = $1 AND value = ANY($2) ORDER BY value`, [w.org, waIds])).map((r) => r.value)).toEqual(waIds);
    await draining;
    // Each held send had reached the provider before the opt-outs were answered; nothing went after.
    for (const waId of waIds) {
      const calls = await w.sandbox.received(waId);
      expect(calls).toHaveLength(1);
      expect(calls[0]!.arrived_at).toBeLessThan(askedAt);
    }
  });

  it('does not suppress anything for a message that is not an opt-out', async () => {
    const waId = '5592977770102';
    expect((await w.meta(inboundWebhook(waId, 'Para quando é a entrega?'))).status).toBe(200);
    expect(await w.world.sql(`SELECT 1 FROM ${o('contact_suppressions')} WHERE organization_id = $1 AND value = $2`, [w.org, waId])).toHaveLength(0);
  });
});
