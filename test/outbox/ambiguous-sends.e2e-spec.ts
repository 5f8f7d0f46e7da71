import { randomUUID } from 'node:crypto';
import { gatewayBuilders, type SeededKey } from '../gateway/gateway-world.js';
import { inboundWebhook, soon, startWireWorld, type WireWorld } from './wire-world.js';

/**
 * A send whose outcome is unknown (the connection broke after Meta took it: seed 004 "Ambiguity is
 * resolved by correlation") is visible where operators look: the message shows `ambiguous` with
 * its outbox entry, `GET /outbox/ambiguous` lists it and `POST /outbox/ambiguous/{id}/resolve`
 * settles it (admin scope), which moves the message. Later messages to the same contact are not
 * held behind it. All through the gateway; the wire is the sandbox.
 */
describe('ambiguous sends through the REST API', () => {
  let w: WireWorld;
  let stranger: SeededKey;
  let reader: SeededKey;
  const waId = '5592988883301';
  let conversationId: string;

  beforeAll(async () => {
    w = await startWireWorld('outbox_ambiguous_rest');
    stranger = await gatewayBuilders(w.gateway).organizationWithKey({ scopes: ['admin', 'messaging:read', 'messaging:write'] });
    reader = await gatewayBuilders(w.gateway).organizationWithKey({ organizationId: w.org, scopes: ['messaging:read', 'messaging:write'], email: 'reader@example.com' });
    const text = `Oi ${randomUUID().slice(0, 6)}`;
    expect((await w.meta(inboundWebhook(waId, text))).status).toBe(200);
    conversationId = await soon(async () => (await w.world.sql<{ conversation_id: string }>(`SELECT conversation_id FROM "${w.world.schema('messaging')}".messages WHERE body = $1`, [text]))[0]?.conversation_id);
    await w.drain(); // the inbound message's read receipt
  }, 90_000);
  afterAll(() => w.close());

  const api = (method: string, path: string, json?: unknown, secret = w.key.secret) => w.http(method, path, { secret, json });
  const send = async (text: string) => {
    const res = await api('POST', `/conversations/${conversationId}/messages`, { idempotency_key: randomUUID(), text });
    expect(res.status).toBe(201);
    return res.body.message_id as string;
  };
  const viewOf = async (messageId: string) => ((await api('GET', `/conversations/${conversationId}/messages?limit=50`)).body.items as { id: string; status: string; outbox_entry_id: string | null }[]).find((x) => x.id === messageId)!;
  /** An operator's text whose connection breaks after Meta took it. */
  async function ambiguousSend(text: string): Promise<{ messageId: string; entryId: string }> {
    await w.sandbox.fault({ kind: 'drop', match: { wa_id: waId } });
    const messageId = await send(text);
    await soon(async () => (await w.entriesOf(messageId)).length === 1);
    await w.drain(2);
    const [entry] = await w.entriesOf(messageId);
    expect(entry).toMatchObject({ status: 'ambiguous' });
    return { messageId, entryId: entry!.id };
  }

  let first: { messageId: string; entryId: string };
  let second: { messageId: string; entryId: string };

  it('shows the message as ambiguous with its outbox entry, and lets the next message to the contact go out', async () => {
    first = await ambiguousSend('Seu pedido foi enviado');
    await soon(async () => (await viewOf(first.messageId)).status === 'ambiguous');
    expect(await viewOf(first.messageId)).toMatchObject({ status: 'ambiguous', outbox_entry_id: first.entryId });

    const later = await send('Qualquer dúvida, estamos aqui');
    await soon(async () => (await w.entriesOf(later)).length === 1);
    await w.drain(2);
    const texts = (await w.sandbox.received(waId)).map((c) => [(c.body as { text?: { body: string } }).text?.body, c.outcome]);
    expect(texts).toEqual([
      ['Seu pedido foi enviado', 'drop'],
      ['Qualquer dúvida, estamos aqui', 'accepted'],
    ]);
    await soon(async () => (await viewOf(later)).status === 'sent');
    second = await ambiguousSend('Chegou bem?');
  });

  it('lists the organization’s ambiguous sends by pages, validates the query, and needs the admin scope', async () => {
    const page1 = await api('GET', '/outbox/ambiguous?limit=1');
    expect(page1.status).toBe(200);
    expect(page1.body.items.map((e: { id: string }) => e.id)).toEqual([first.entryId]);
    expect(page1.body.items[0]).toMatchObject({ status: 'ambiguous', channel: 'whatsapp', to: `+${waId}`, log_context: expect.objectContaining({ message_id: first.messageId }) });
    expect(page1.body.next_cursor).toEqual(expect.any(String));
    const page2 = await api('GET', `/outbox/ambiguous?limit=1&cursor=${page1.body.next_cursor}`);
    expect(page2.body.items.map((e: { id: string }) => e.id)).toEqual([second.entryId]);
    expect(page2.body.next_cursor).toBeNull();
    expect((await api('GET', '/outbox/ambiguous?limit=2')).body.items.map((e: { id: string }) => e.id)).toEqual([first.entryId, second.entryId]);

    expect((await api('GET', '/outbox/ambiguous?cursor=not-a-cursor')).body.error.code).toBe('invalid_cursor');
    expect((await api('GET', '/outbox/ambiguous?cursor=not-a-cursor')).status).toBe(422);
    const badLimit = await api('GET', '/outbox/ambiguous?limit=0');
    expect([badLimit.status, badLimit.body.error.code]).toEqual([400, 'validation_failed']);
    expect((await api('GET', '/outbox/ambiguous', undefined, reader.secret)).status).toBe(403);
    // Another organization's cursor and list: nothing of ours.
    expect((await api('GET', '/outbox/ambiguous', undefined, stranger.secret)).body).toEqual({ items: [], next_cursor: null });
    expect((await api('GET', `/outbox/ambiguous?cursor=${page1.body.next_cursor}`, undefined, stranger.secret)).status).toBe(422);
  });

  it('resolves one: validation, 404 for another organization, the message moves, 409 once settled', async () => {
    const path = `/outbox/ambiguous/${first.entryId}/resolve`;
    for (const body of [{ status: 'maybe', note: 'x' }, { status: 'rejected' }, { status: 'rejected', note: '' }, { status: 'rejected', note: 'x', extra: 1 }]) {
      const res = await api('POST', path, body);
      expect([res.status, res.body.error.code]).toEqual([400, 'validation_failed']);
    }
    expect((await api('POST', '/outbox/ambiguous/not-a-uuid/resolve', { status: 'rejected', note: 'x' })).status).toBe(400);
    expect((await api('POST', path, { status: 'rejected', note: 'x' }, reader.secret)).status).toBe(403);
    const foreign = await api('POST', path, { status: 'accepted', note: 'not mine' }, stranger.secret);
    expect([foreign.status, foreign.body.error.code]).toEqual([404, 'not_found']);
    expect((await api('POST', `/outbox/ambiguous/${randomUUID()}/resolve`, { status: 'accepted', note: 'x' })).status).toBe(404);

    const rejected = await api('POST', path, { status: 'rejected', note: 'the customer says nothing arrived' });
    expect(rejected).toMatchObject({ status: 200, body: { outcome: 'resolved_failed', entry_id: first.entryId, status: 'failed' } });
    await soon(async () => (await viewOf(first.messageId)).status === 'failed');
    const [row] = await w.world.sql<{ resolution_note: string; resolved_by: string }>(`SELECT resolution_note, resolved_by FROM "${w.world.schema('outbox-dispatcher')}".message_outbox WHERE id = $1`, [first.entryId]);
    expect(row).toEqual({ resolution_note: 'the customer says nothing arrived', resolved_by: `operator:member:${w.key.memberId}` });

    const again = await api('POST', path, { status: 'accepted', note: 'changed my mind' });
    expect(again).toMatchObject({ status: 409, body: { error: { code: 'not_ambiguous', details: { entry_id: first.entryId, status: 'failed' } } } });

    const accepted = await api('POST', `/outbox/ambiguous/${second.entryId}/resolve`, { status: 'accepted', note: 'seen on the phone' });
    expect(accepted).toMatchObject({ status: 200, body: { outcome: 'resolved', status: 'accepted' } });
    await soon(async () => (await viewOf(second.messageId)).status === 'sent');
    expect((await api('GET', '/outbox/ambiguous')).body).toEqual({ items: [], next_cursor: null });
  });
});
