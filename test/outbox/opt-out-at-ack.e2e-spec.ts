import { randomUUID } from 'node:crypto';
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
    w = await startWireWorld('outbox_optout_ack', { INBOUND_POLL_MS: '0' });
  }, 90_000);
  afterAll(() => w.close());


  it('suppresses the number and cancels its queued send before answering 200; a send made after the 200 never reaches the wire', async () => {
    const waId = '5592977770101';
    const contact = await w.http('POST', '/contacts', { secret: w.key.secret, json: { name: 'Ana', phone: `+${waId}` } });
    expect(contact.status).toBe(201);
    const contactId = contact.body.contact_id as string;
    const queuedBefore = await w.http('POST', '/notifications', { secret: w.key.secret, json: { contact_id: contactId, title: 'Pedido', body: 'Seu pedido saiu', channels: ['whatsapp'] } });
    expect(queuedBefore.status).toBe(201);
    const heldId = queuedBefore.body.deliveries[0].message_id as string;
    await soon(async () => (await w.entriesOf(heldId))[0]?.status === 'pending');

    expect((await w.meta(inboundWebhook(waId, 'PARE, obrigado'))).status).toBe(200);
    // Nothing processed the message yet (the worker is held): these are the acknowledgement's doing.
    expect(await w.world.sql(`SELECT 1 FROM "${w.world.schema('messaging')}".messages WHERE body = 'PARE, obrigado'`)).toHaveLength(0);
    expect(await w.world.sql(`SELECT reason FROM ${o('contact_suppressions')} WHERE organization_id = $1 AND channel = 'whatsapp' AND value = $2`, [w.org, waId])).toEqual([{ reason: 'opt_out' }]);
    expect((await w.entriesOf(heldId))[0]!.status).toBe('cancelled');

    const after = await w.http('POST', '/notifications', { secret: w.key.secret, json: { contact_id: contactId, title: 'Pedido', body: `Outra coisa ${randomUUID().slice(0, 4)}`, channels: ['whatsapp'] } });
    expect(after.status).toBe(201);
    await soon(async () => (await w.entriesOf(after.body.deliveries[0].message_id))[0]);
    await w.drain();
    expect(await w.sandbox.received(waId)).toEqual([]);
    expect((await w.entriesOf(after.body.deliveries[0].message_id))[0]!.status).not.toBe('accepted');
  });

  it('does not suppress anything for a message that is not an opt-out', async () => {
    const waId = '5592977770102';
    expect((await w.meta(inboundWebhook(waId, 'Para quando é a entrega?'))).status).toBe(200);
    expect(await w.world.sql(`SELECT 1 FROM ${o('contact_suppressions')} WHERE organization_id = $1 AND value = $2`, [w.org, waId])).toHaveLength(0);
  });
});
