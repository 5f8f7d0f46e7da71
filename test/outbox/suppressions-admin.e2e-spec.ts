import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import { randomUUID } from 'node:crypto';
import { OutboxAccountRpc, OutreachDispatcherRpc } from '@touchpoint/contracts';
import { RpcClient } from '@touchpoint/runtime';
import { createTestWorld, type TestWorld } from '@touchpoint/testing';
import { gatewayStartOptions } from '../../apps/gateway/src/gateway.app.js';
import { GatewayConfig } from '../../apps/gateway/src/gateway.config.js';
import { GatewayModule } from '../../apps/gateway/src/gateway.module.js';
import { gatewayBuilders, httpClient, type SeededKey } from '../gateway/gateway-world.js';
import { type Dispatcher, SandboxHandle, startDispatcher } from './harness.js';

/**
 * The do-not-contact list's admin routes (seed 003 §5 `contact_suppressions`: never cleared by
 * code; a user with the admin scope removes a row; issue 20: search, add, remove with a note),
 * through the gateway to the dispatcher, and what the list answers after.
 */
describe('/suppressions', () => {
  let world: TestWorld;
  let sandbox: SandboxHandle;
  let d: Dispatcher;
  let gateway: NestFastifyApplication;
  let http: ReturnType<typeof httpClient>;
  let admin: SeededKey;
  let reader: SeededKey;

  beforeAll(async () => {
    world = await createTestWorld('outbox_suppressions');
    sandbox = await SandboxHandle.start();
    d = await startDispatcher(world, sandbox);
    const config = world.config(GatewayConfig);
    gateway = await world.start(GatewayModule.forRoot(config), gatewayStartOptions(config));
    http = httpClient((await gateway.getUrl()).replace('[::1]', '127.0.0.1'));
    admin = await gatewayBuilders(gateway).organizationWithKey({ scopes: ['admin'] });
    reader = await gatewayBuilders(gateway).organizationWithKey({ scopes: ['messaging:read'] });
  });
  afterAll(async () => {
    await world.close();
    await sandbox.close();
  });

  const check = (org: string, value: string) => d.app.get(RpcClient).callUnchecked<{ suppressed: unknown[] }>('outbox-dispatcher', OutreachDispatcherRpc.SuppressionCheck, { organization_id: org, values: [{ channel: 'email', value }] });

  it('removes a row for an admin key (the address can be contacted again), refuses other scopes, and validates the body', async () => {
    const email = `Ana.${randomUUID().slice(0, 6)}@Example.com`;
    await d.suppressions.add({ organization_id: admin.organizationId, channel: 'email', value: email, reason: 'unsubscribed' });
    expect((await check(admin.organizationId, email)).suppressed).toHaveLength(1);

    expect((await http('DELETE', '/suppressions', { secret: reader.secret, json: { channel: 'email', value: email, note: 'asked to hear from us again' } })).status).toBe(403);
    expect((await http('DELETE', '/suppressions', { secret: admin.secret, json: { channel: 'fax', value: email, note: 'n' } })).status).toBe(400);
    expect((await check(admin.organizationId, email)).suppressed).toHaveLength(1);

    const res = await http('DELETE', '/suppressions', { secret: admin.secret, json: { channel: 'email', value: email, note: 'asked to hear from us again' } });
    expect(res).toMatchObject({ status: 200, body: { removed: true, channel: 'email', value: email.toLowerCase() } });
    expect((await check(admin.organizationId, email)).suppressed).toEqual([]);
  });

  it('answers removed: false for a value that was not on the list (and for a repeat)', async () => {
    const email = `never.${randomUUID().slice(0, 6)}@example.com`;
    expect(await http('DELETE', '/suppressions', { secret: admin.secret, json: { channel: 'email', value: email, note: 'asked to hear from us again' } })).toMatchObject({ status: 200, body: { removed: false, channel: 'email', value: email } });
    await d.suppressions.add({ organization_id: admin.organizationId, channel: 'email', value: email });
    expect(await http('DELETE', '/suppressions', { secret: admin.secret, json: { channel: 'email', value: email, note: 'asked to hear from us again' } })).toMatchObject({ status: 200, body: { removed: true } });
    expect(await http('DELETE', '/suppressions', { secret: admin.secret, json: { channel: 'email', value: email, note: 'asked to hear from us again' } })).toMatchObject({ status: 200, body: { removed: false } });
  });

  it('refuses a removal without a note, and records the note and the member with a removal', async () => {
    const email = `note.${randomUUID().slice(0, 6)}@example.com`;
    await d.suppressions.add({ organization_id: admin.organizationId, channel: 'email', value: email, reason: 'bounced' });
    for (const json of [
      { channel: 'email', value: email },
      { channel: 'email', value: email, note: '' },
      { channel: 'email', value: email, note: 'x'.repeat(1001) },
    ]) {
      expect(await http('DELETE', '/suppressions', { secret: admin.secret, json })).toMatchObject({ status: 400, body: { error: { code: 'validation_failed' } } });
    }
    expect((await check(admin.organizationId, email)).suppressed).toHaveLength(1);

    const res = await http('DELETE', '/suppressions', { secret: admin.secret, json: { channel: 'email', value: email, note: '  Called us: the bounce was a full mailbox  ' } });
    expect(res).toMatchObject({ status: 200, body: { removed: true, note: 'Called us: the bounce was a full mailbox' } });
    expect(Date.parse(res.body.removed_at)).not.toBeNaN();
    const removals = await world.sql(`SELECT channel, value, reason, note, removed_by FROM ${world.schema('outbox-dispatcher')}.contact_suppression_removals WHERE organization_id = $1 AND value = $2`, [admin.organizationId, email]);
    expect(removals).toEqual([{ channel: 'email', value: email, reason: 'bounced', note: 'Called us: the bounce was a full mailbox', removed_by: `member:${admin.memberId}` }]);
  });

  it('adds an address by hand: keyed like the senders key it, with its note and member, its queued sends cancelled; a repeat changes nothing', async () => {
    const phone = `+55 11 98${String(Math.floor(Math.random() * 1e7)).padStart(7, '0')}`;
    const digits = phone.replace(/\D/g, '');
    const added = await http('POST', '/suppressions', { secret: admin.secret, json: { channel: 'whatsapp', value: phone, note: 'Asked by phone not to be contacted' } });
    expect(added).toMatchObject({ status: 201, body: { channel: 'whatsapp', value: digits, created: true, cancelled_entry_ids: [] } });
    const listed = await http('GET', `/suppressions?q=${encodeURIComponent(phone)}`, { secret: admin.secret });
    expect(listed).toMatchObject({ status: 200, body: { items: [{ channel: 'whatsapp', value: digits, reason: 'manual', note: 'Asked by phone not to be contacted', added_by: `member:${admin.memberId}` }], next_cursor: null } });
    expect(listed.body.items[0].id).toMatch(/^[0-9a-f-]{36}$/);

    const again = await http('POST', '/suppressions', { secret: admin.secret, json: { channel: 'whatsapp', value: digits, note: 'a second note' } });
    expect(again).toMatchObject({ status: 201, body: { value: digits, created: false } });
    expect((await http('GET', `/suppressions?q=${digits}`, { secret: admin.secret })).body.items.map((i: { note: string }) => i.note)).toEqual(['Asked by phone not to be contacted']);

    expect(await http('POST', '/suppressions', { secret: admin.secret, json: { channel: 'whatsapp', value: 'not a phone' } })).toMatchObject({ status: 400, body: { error: { code: 'invalid_recipient' } } });
    expect(await http('POST', '/suppressions', { secret: admin.secret, json: { channel: 'fax', value: 'a@example.com' } })).toMatchObject({ status: 400, body: { error: { code: 'validation_failed' } } });
    expect(await http('POST', '/suppressions', { secret: admin.secret, json: { channel: 'email', value: 'a@example.com', note: 'x'.repeat(1001) } })).toMatchObject({ status: 400 });
    expect((await http('POST', '/suppressions', { secret: reader.secret, json: { channel: 'email', value: 'a@example.com' } })).status).toBe(403);
  });

  it('refuses an email or LinkedIn value that is not an address of its channel (400 invalid_recipient, nothing added), as the enqueue path does', async () => {
    for (const json of [
      { channel: 'email', value: 'not an address' },
      { channel: 'email', value: 'ana@example' },
      { channel: 'email', value: 'Ana <ana@example.com>' },
      { channel: 'linkedin', value: 'not a member id' },
    ]) {
      expect(await http('POST', '/suppressions', { secret: admin.secret, json })).toMatchObject({ status: 400, body: { error: { code: 'invalid_recipient' } } });
    }
    expect((await http('GET', `/suppressions?q=${encodeURIComponent('not a')}`, { secret: admin.secret })).body.items).toEqual([]);
    const added = await http('POST', '/suppressions', { secret: admin.secret, json: { channel: 'email', value: ' Ana.Souza@Example.com ' } });
    expect(added).toMatchObject({ status: 201, body: { channel: 'email', value: 'ana.souza@example.com', created: true } });
  });

  it('searches by part of the value or the note, any case, newest first, by pages whose cursor is bound to the search', async () => {
    const tag = randomUUID().slice(0, 8);
    const emails = [0, 1, 2].map((i) => `page${i}.${tag}@example.com`);
    for (const email of emails) {
      expect((await http('POST', '/suppressions', { secret: admin.secret, json: { channel: 'email', value: email } })).status).toBe(201);
      d.clock.advance(1000);
    }
    await http('POST', '/suppressions', { secret: admin.secret, json: { channel: 'linkedin', value: `ACoAA${tag}`, note: `Legal asked: case ${tag.toUpperCase()}` } });

    const first = await http('GET', `/suppressions?q=${tag.toUpperCase()}&channel=email&limit=2`, { secret: admin.secret });
    expect(first.status).toBe(200);
    expect(first.body.items.map((i: { value: string }) => i.value)).toEqual([emails[2], emails[1]]);
    expect(first.body.next_cursor).toEqual(expect.any(String));
    const second = await http('GET', `/suppressions?q=${tag.toUpperCase()}&channel=email&limit=2&cursor=${first.body.next_cursor}`, { secret: admin.secret });
    expect(second.body).toEqual({ items: [expect.objectContaining({ value: emails[0] })], next_cursor: null });

    const byNote = await http('GET', `/suppressions?q=${encodeURIComponent(`case ${tag}`)}`, { secret: admin.secret });
    expect(byNote.body.items).toEqual([expect.objectContaining({ channel: 'linkedin', value: `ACoAA${tag}` })]);
    // A LIKE wildcard in q is a plain character.
    expect((await http('GET', `/suppressions?q=${encodeURIComponent(`page_.${tag}`)}`, { secret: admin.secret })).body.items).toEqual([]);

    expect(await http('GET', `/suppressions?q=other&limit=2&cursor=${first.body.next_cursor}`, { secret: admin.secret })).toMatchObject({ status: 422, body: { error: { code: 'invalid_cursor' } } });
    expect(await http('GET', '/suppressions?cursor=not-a-cursor', { secret: admin.secret })).toMatchObject({ status: 422, body: { error: { code: 'invalid_cursor' } } });
    for (const query of ['limit=0', 'limit=201', 'channel=fax', `q=${'x'.repeat(321)}`]) expect((await http('GET', `/suppressions?${query}`, { secret: admin.secret })).status).toBe(400);
    expect((await http('GET', '/suppressions', { secret: reader.secret })).status).toBe(403);
  });

  it('only touches the caller organization', async () => {
    const other = `org-${randomUUID()}`;
    const email = `bo.${randomUUID().slice(0, 6)}@example.com`;
    await d.suppressions.add({ organization_id: other, channel: 'email', value: email });
    await http('DELETE', '/suppressions', { secret: admin.secret, json: { channel: 'email', value: email, note: 'asked to hear from us again' } });
    expect((await check(other, email)).suppressed).toHaveLength(1);
    expect((await http('GET', `/suppressions?q=${encodeURIComponent(email)}`, { secret: admin.secret })).body.items).toEqual([]);
    expect(OutboxAccountRpc.SuppressionRemove).toBe('outbox.suppressions.remove');
  });
});
