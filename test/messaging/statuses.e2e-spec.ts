import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import { randomUUID } from 'node:crypto';
import { MessagingEvents, OutboxEvents } from '@touchpoint/contracts';
import { UnitOfWork } from '@touchpoint/runtime';
import { createTestWorld, eventually, publishEvent, type TestWorld } from '@touchpoint/testing';
import { MessagingConfig } from '../../apps/messaging/src/messaging.config.js';
import { MessagingModule } from '../../apps/messaging/src/messaging.module.js';
import { NotificationsService } from '../../apps/messaging/src/notifications/notifications.service.js';
import { OutcomesService } from '../../apps/messaging/src/sending/outcomes.service.js';
import { SendService } from '../../apps/messaging/src/sending/send.service.js';
import { outboxEvents } from './helpers.js';

describe('messaging outcomes and statuses', () => {
  let world: TestWorld;
  let app: NestFastifyApplication;
  const org = `org-${randomUUID()}`;
  const m = () => world.schema('messaging');

  beforeAll(async () => {
    world = await createTestWorld('statuses');
    app = await world.start(MessagingModule.forRoot(world.config(MessagingConfig, { INSTANCE_SWEEP_INTERVAL_MS: '0', SUMMARIES: 'off' })));
  });
  afterAll(() => world.close());

  const send = (text: string, phone = '+5511987650000') => app.get(SendService).send({ organization_id: org, idempotency_key: `test:${randomUUID()}`, channel: 'whatsapp', to: phone, sender_type: 'followup', requester: 'followups', text });
  const messageRow = async (id: string) =>
    (
      await world.sql<{ status: string; external_id: string | null; sent_at: Date | null; delivered_at: Date | null; read_at: Date | null; failed_at: Date | null }>(`SELECT status, external_id, sent_at, delivered_at, read_at, failed_at FROM "${m()}".messages WHERE id = $1`, [id])
    )[0];
  const entry = (messageId: string, key: string, wamid?: string) => ({
    entry_id: randomUUID(),
    idempotency_key: key,
    channel: 'whatsapp',
    to: '+5511987650000',
    provider_message_id: wamid ?? null,
    log_context: { message_id: messageId },
  });
  const status = (wamid: string, s: string, seconds: number) => ({
    channel: 'whatsapp',
    provider_message_id: wamid,
    status: s,
    provider_timestamp: new Date(seconds * 1000).toISOString(),
    recipient: '5511987650000',
    entry_id: null,
    idempotency_key: null,
    log_context: null,
  });

  it('writes the send queued with its outbox.enqueue command carrying the caller key', async () => {
    const sent = await send('hello');
    expect(sent).toMatchObject({ status: 'queued', created: true });
    const [row] = await world.sql<{ idempotency_key: string }>(`SELECT idempotency_key FROM "${m()}".messages WHERE id = $1`, [sent.message_id]);
    const commands = (await outboxEvents<{ idempotency_key: string; to: string; log_context: Record<string, string> }>(world, 'messaging', 'outbox.enqueue')).filter((e) => e.payload.data.log_context?.message_id === sent.message_id);
    expect(commands).toHaveLength(1);
    expect(commands[0].payload.data).toMatchObject({ idempotency_key: row.idempotency_key, to: '+5511987650000' });
    // the same key again: the same message, no second command
    const again = await app.get(SendService).send({ organization_id: org, idempotency_key: row.idempotency_key, channel: 'whatsapp', to: '+5511987650000', sender_type: 'followup', requester: 'followups', text: 'hello' });
    expect(again).toMatchObject({ message_id: sent.message_id, created: false });
  });

  it('never moves a message back over the statuses read, delivered, sent, failed, sent', async () => {
    const sent = await send('statuses in disorder');
    const wamid = `wamid.${randomUUID()}`;
    const key = (await world.sql<{ idempotency_key: string }>(`SELECT idempotency_key FROM "${m()}".messages WHERE id = $1`, [sent.message_id]))[0].idempotency_key;
    await publishEvent(world, OutboxEvents.EntryAccepted, org, entry(sent.message_id, key, wamid));
    await eventually(async () => (await messageRow(sent.message_id)).status === 'sent');
    const t = 1_760_000_000;
    const eventIds: string[] = [];
    for (const [i, s] of ['read', 'delivered', 'sent', 'failed', 'sent'].entries()) {
      eventIds.push((await publishEvent(world, OutboxEvents.ProviderStatusRecorded, org, status(wamid, s, t + i))).event_id);
    }
    await eventually(async () => {
      const [{ n }] = await world.sql<{ n: number }>(`SELECT count(*)::int AS n FROM "${m()}".inbox_events WHERE handler = 'OutcomesConsumer.onProviderStatus' AND event_id = ANY($1)`, [eventIds]);
      return n >= 5;
    });
    const row = await messageRow(sent.message_id);
    expect(row.status).toBe('read');
    expect(row.read_at).not.toBeNull();
    expect(row.delivered_at).not.toBeNull();
    expect(row.failed_at).toBeNull();
    const failed = (await outboxEvents<{ message_id: string }>(world, 'messaging', MessagingEvents.MessageFailed)).filter((e) => e.payload.data.message_id === sent.message_id);
    expect(failed).toHaveLength(0);
    const sentEvents = (await outboxEvents<{ message_id: string; requester: string }>(world, 'messaging', MessagingEvents.MessageSent)).filter((e) => e.payload.data.message_id === sent.message_id);
    expect(sentEvents).toHaveLength(1);
    expect(sentEvents[0].payload.data.requester).toBe('followups');
    // The requester hears the read once; the delivered reported after it moved nothing, so it is not told.
    const ofMessage = async (type: string) => (await outboxEvents<{ message_id: string; status_at: string; idempotency_key: string }>(world, 'messaging', type)).filter((e) => e.payload.data.message_id === sent.message_id);
    const read = await ofMessage(MessagingEvents.MessageRead);
    expect(read).toHaveLength(1);
    expect(read[0].payload.data).toMatchObject({ status: 'read', requester: 'followups', idempotency_key: key, status_at: new Date(t * 1000).toISOString() });
    expect(await ofMessage(MessagingEvents.MessageDelivered)).toHaveLength(0);
  });

  it('tells the requester once when its message is delivered and once when it is read, with the provider times', async () => {
    const sent = await send('delivered then read');
    const wamid = `wamid.${randomUUID()}`;
    const key = (await world.sql<{ idempotency_key: string }>(`SELECT idempotency_key FROM "${m()}".messages WHERE id = $1`, [sent.message_id]))[0].idempotency_key;
    await publishEvent(world, OutboxEvents.EntryAccepted, org, entry(sent.message_id, key, wamid));
    await eventually(async () => (await messageRow(sent.message_id)).status === 'sent');
    const t = 1_760_000_500;
    const ids = ['delivered', 'delivered', 'read', 'read'].map((_, i) => `outbox.provider_status.recorded:${wamid}:${i}`);
    for (const [i, s] of ['delivered', 'delivered', 'read', 'read'].entries()) await publishEvent(world, OutboxEvents.ProviderStatusRecorded, org, status(wamid, s, t + i), { eventId: ids[i] });
    await eventually(async () => (await world.sql(`SELECT 1 FROM "${m()}".inbox_events WHERE event_id = ANY($1::text[])`, [ids])).length === ids.length);
    const ofMessage = async (type: string) => (await outboxEvents<{ message_id: string; status_at: string }>(world, 'messaging', type)).filter((e) => e.payload.data.message_id === sent.message_id);
    const delivered = await ofMessage(MessagingEvents.MessageDelivered);
    const read = await ofMessage(MessagingEvents.MessageRead);
    expect(delivered.map((e) => e.payload.data)).toEqual([expect.objectContaining({ status: 'delivered', idempotency_key: key, requester: 'followups', status_at: new Date(t * 1000).toISOString() })]);
    expect(read.map((e) => e.payload.data)).toEqual([expect.objectContaining({ status: 'read', idempotency_key: key, status_at: new Date((t + 2) * 1000).toISOString() })]);
  });

  it('applies a consumer batch of statuses of several messages, out of order and repeated, in one transaction: forward only, each requester event once, an unknown id kept', async () => {
    const [one, two] = [await send('batch one'), await send('batch two')];
    const [w1, w2, unknown] = [`wamid.${randomUUID()}`, `wamid.${randomUUID()}`, `wamid.${randomUUID()}`];
    const uow = app.get(UnitOfWork);
    const outcomes = app.get(OutcomesService);
    for (const [sent, wamid] of [
      [one, w1],
      [two, w2],
    ] as const) {
      const [{ idempotency_key }] = await world.sql<{ idempotency_key: string }>(`SELECT idempotency_key FROM "${m()}".messages WHERE id = $1`, [sent.message_id]);
      await uow.run((tx) => outcomes.accepted(tx, org, { ...entry(sent.message_id, idempotency_key, wamid), channel: 'whatsapp' }));
    }
    const t = 1_760_001_000;
    const report = (wamid: string, s: string, i: number) => ({ organization_id: org, channel: 'whatsapp' as const, external_id: wamid, status: s, at: new Date((t + i) * 1000) });
    await uow.run(async (tx) => {
      for (const [i, s] of ['read', 'delivered', 'sent', 'failed', 'read'].entries()) outcomes.statusLater(tx, report(w1, s, i), null);
      outcomes.statusLater(tx, report(w2, 'delivered', 10), null);
      outcomes.statusLater(tx, report(unknown, 'delivered', 11), null);
      outcomes.statusLater(tx, report(w2, 'delivered', 12), null);
    });
    const first = await messageRow(one.message_id);
    expect(first).toMatchObject({ status: 'read', failed_at: null });
    // A read implies the delivery: its time stamps both, and the later `delivered` finds them set.
    expect(first.read_at?.toISOString()).toBe(new Date(t * 1000).toISOString());
    expect(first.delivered_at?.toISOString()).toBe(new Date(t * 1000).toISOString());
    const second = await messageRow(two.message_id);
    expect(second).toMatchObject({ status: 'delivered', read_at: null });
    expect(second.delivered_at?.toISOString()).toBe(new Date((t + 10) * 1000).toISOString());
    const ofMessage = async (type: string, id: string) => (await outboxEvents<{ message_id: string }>(world, 'messaging', type)).filter((e) => e.payload.data.message_id === id);
    expect(await ofMessage(MessagingEvents.MessageRead, one.message_id)).toHaveLength(1);
    expect(await ofMessage(MessagingEvents.MessageDelivered, one.message_id)).toHaveLength(0);
    expect(await ofMessage(MessagingEvents.MessageFailed, one.message_id)).toHaveLength(0);
    expect(await ofMessage(MessagingEvents.MessageDelivered, two.message_id)).toHaveLength(1);
    expect(await world.sql(`SELECT 1 FROM "${m()}".pending_statuses WHERE external_id = $1`, [unknown])).toHaveLength(1);
    // The live feed shows each move once, in order.
    const feed = await world.sql<{ data: { message_id: string; from: string; to: string } }>(`SELECT data FROM "${m()}".stream_events WHERE type = $1 AND data->>'message_id' = ANY($2::text[]) ORDER BY id`, [MessagingEvents.MessageStatusChanged, [one.message_id, two.message_id]]);
    expect(feed.map((f) => [f.data.message_id, f.data.from, f.data.to])).toEqual([
      [one.message_id, 'queued', 'sent'],
      [two.message_id, 'queued', 'sent'],
      [one.message_id, 'sent', 'read'],
      [two.message_id, 'sent', 'delivered'],
    ]);
  });

  it('keeps a status that arrives before the provider id and applies it when the id is known', async () => {
    const sent = await send('early status');
    const wamid = `wamid.${randomUUID()}`;
    const key = (await world.sql<{ idempotency_key: string }>(`SELECT idempotency_key FROM "${m()}".messages WHERE id = $1`, [sent.message_id]))[0].idempotency_key;
    await publishEvent(world, OutboxEvents.ProviderStatusRecorded, org, status(wamid, 'delivered', 1_760_000_100));
    await eventually(async () => (await world.sql(`SELECT 1 FROM "${m()}".pending_statuses WHERE external_id = $1`, [wamid])).length === 1);
    expect((await messageRow(sent.message_id)).status).toBe('queued');

    await publishEvent(world, OutboxEvents.EntryAccepted, org, entry(sent.message_id, key, wamid));
    await eventually(async () => (await messageRow(sent.message_id)).status === 'delivered');
    const row = await messageRow(sent.message_id);
    expect(row.external_id).toBe(wamid);
    expect(row.delivered_at?.toISOString()).toBe(new Date(1_760_000_100_000).toISOString());
    expect(await world.sql(`SELECT 1 FROM "${m()}".pending_statuses WHERE external_id = $1`, [wamid])).toHaveLength(0);
  });

  /**
   * Runs the acceptance of `wamid` and holds its transaction open (the row locked, the id set, the
   * pending statuses already taken), handles a `read` for `wamid` on another connection until that
   * waits on the acceptance or is done, then commits the acceptance: the order that lost statuses.
   */
  async function statusDuringAcceptance(messageId: string, key: string, wamid: string, hint: string | null) {
    const uow = app.get(UnitOfWork);
    const outcomes = app.get(OutcomesService);
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    let pid = 0;
    let taken!: () => void;
    const acceptedInTx = new Promise<void>((r) => (taken = r));
    const acceptance = uow.run(async (tx) => {
      pid = (await tx.query<{ pid: number }>(`SELECT pg_backend_pid() AS pid`))[0].pid;
      await outcomes.accepted(tx, org, { ...entry(messageId, key, wamid), channel: 'whatsapp' });
      taken();
      await held;
    });
    await Promise.race([acceptedInTx, acceptance]);
    let done = false;
    const handled = uow.run((tx) => outcomes.status(tx, { organization_id: org, channel: 'whatsapp', external_id: wamid, status: 'read', at: new Date(1_760_000_900_000) }, hint)).finally(() => (done = true));
    await eventually(async () => done || (await world.sql(`SELECT 1 FROM pg_stat_activity WHERE $1 = ANY(pg_blocking_pids(pid))`, [pid])).length > 0);
    release();
    await acceptance;
    return handled;
  }

  for (const hinted of [true, false]) {
    it(`applies a status handled while the acceptance that sets its provider id commits, ${hinted ? 'with' : 'without'} the message hint`, async () => {
      const sent = await send(`status during acceptance ${hinted ? 'hinted' : 'unhinted'}`);
      const wamid = `wamid.${randomUUID()}`;
      const key = (await world.sql<{ idempotency_key: string }>(`SELECT idempotency_key FROM "${m()}".messages WHERE id = $1`, [sent.message_id]))[0].idempotency_key;
      expect(await statusDuringAcceptance(sent.message_id, key, wamid, hinted ? sent.message_id : null)).toBe('applied');
      const row = await messageRow(sent.message_id);
      expect(row).toMatchObject({ status: 'read', external_id: wamid });
      expect(row.read_at?.toISOString()).toBe(new Date(1_760_000_900_000).toISOString());
      const read = (await outboxEvents<{ message_id: string }>(world, 'messaging', MessagingEvents.MessageRead)).filter((e) => e.payload.data.message_id === sent.message_id);
      expect(read).toHaveLength(1);
      expect(await world.sql(`SELECT 1 FROM "${m()}".pending_statuses WHERE external_id = $1`, [wamid])).toHaveLength(0);
    });
  }

  it('takes the messages of an acceptance batch in id order before its first acceptance, so a status batch of the same messages waits for it instead of deadlocking', async () => {
    const uow = app.get(UnitOfWork);
    const outcomes = app.get(OutcomesService);
    const [lo, hi] = [await send('batch lock one'), await send('batch lock two')].sort((x, y) => (x.message_id < y.message_id ? -1 : 1));
    const keyOf = async (id: string) => (await world.sql<{ idempotency_key: string }>(`SELECT idempotency_key FROM "${m()}".messages WHERE id = $1`, [id]))[0].idempotency_key;
    const wamid = { lo: `wamid.${randomUUID()}`, hi: `wamid.${randomUUID()}` };
    const accepted = { lo: { ...entry(lo.message_id, await keyOf(lo.message_id), wamid.lo), channel: 'whatsapp' as const }, hi: { ...entry(hi.message_id, await keyOf(hi.message_id), wamid.hi), channel: 'whatsapp' as const } };
    let pid = 0;
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    let firstDone!: () => void;
    const first = new Promise<void>((r) => (firstDone = r));
    // The batch's arrival order is the higher id first: locked one by one, it would hold `hi` and then want `lo`.
    const acceptance = uow.run(async (tx) => {
      pid = (await tx.query<{ pid: number }>(`SELECT pg_backend_pid() AS pid`))[0].pid;
      await outcomes.lockOutcomeBatch(tx, [
        { organizationId: org, type: OutboxEvents.EntryAccepted, data: accepted.hi },
        { organizationId: org, type: OutboxEvents.EntryAccepted, data: accepted.lo },
      ]);
      await outcomes.accepted(tx, org, accepted.hi);
      firstDone();
      await held;
      await outcomes.accepted(tx, org, accepted.lo);
    });
    await Promise.race([first, acceptance]);
    // A status batch of both messages (locked in id order when it commits): `lo` first, then `hi`.
    const at = new Date(1_760_001_000_000);
    const statuses = uow.run(async (tx) => {
      outcomes.statusLater(tx, { organization_id: org, channel: 'whatsapp', external_id: wamid.lo, status: 'read', at }, lo.message_id);
      outcomes.statusLater(tx, { organization_id: org, channel: 'whatsapp', external_id: wamid.hi, status: 'read', at }, hi.message_id);
    });
    await eventually(async () => (await world.sql(`SELECT 1 FROM pg_stat_activity WHERE $1 = ANY(pg_blocking_pids(pid))`, [pid])).length > 0);
    release();
    await expect(acceptance).resolves.toBeUndefined();
    await expect(statuses).resolves.toBeUndefined();
    expect(await messageRow(lo.message_id)).toMatchObject({ status: 'read', external_id: wamid.lo });
    expect(await messageRow(hi.message_id)).toMatchObject({ status: 'read', external_id: wamid.hi });
  });

  it('fails a message on the dispatcher failure and tells the requester, separating enqueue from delivery', async () => {
    const delivery = await send('will fail in delivery');
    const enqueue = await send('will be refused at enqueue');
    const keyOf = async (id: string) => (await world.sql<{ idempotency_key: string }>(`SELECT idempotency_key FROM "${m()}".messages WHERE id = $1`, [id]))[0].idempotency_key;
    await publishEvent(world, OutboxEvents.EntryFailed, org, { ...entry(delivery.message_id, await keyOf(delivery.message_id)), classification: 'recipient_undeliverable', error_code: '131026', attempts: 1 });
    await publishEvent(world, OutboxEvents.EntryFailed, org, { ...entry(enqueue.message_id, await keyOf(enqueue.message_id)), classification: null, error_code: 'invalid_recipient', attempts: 0 });
    await eventually(async () => (await messageRow(delivery.message_id)).status === 'failed' && (await messageRow(enqueue.message_id)).status === 'failed');
    const events = await outboxEvents<{ message_id: string; failure_stage: string; error_code: string }>(world, 'messaging', MessagingEvents.MessageFailed);
    expect(events.find((e) => e.payload.data.message_id === delivery.message_id)?.payload.data).toMatchObject({ failure_stage: 'delivery', error_code: '131026' });
    expect(events.find((e) => e.payload.data.message_id === enqueue.message_id)?.payload.data).toMatchObject({ failure_stage: 'enqueue', error_code: 'invalid_recipient' });
  });

  it('keeps a notification delivery pending until the dispatcher outcome, then marks it sent', async () => {
    const contact = await world.sql<{ id: string }>(`INSERT INTO "${m()}".contacts (organization_id, name, phone, phone_key, created_at, updated_at) VALUES ($1, 'Bruno Example', '+5511912340000', '5511912340000', now(), now()) RETURNING id`, [org]);
    // The contact never wrote (its 24-hour window is closed): the WhatsApp delivery sends the approved template.
    await app.get(NotificationsService).upsertTemplate(org, { key: 'payment_received', title: 'Payment received', body: 'We got your payment.', whatsapp_template: { name: 'payment_received', language: 'en_US', parameters: [] } });
    const created = await app.get(NotificationsService).create({ organization_id: org, contact_id: contact[0].id, template_key: 'payment_received', channels: ['whatsapp', 'in_app'] });
    const whatsapp = created.deliveries.find((d) => d.channel === 'whatsapp')!;
    expect(whatsapp.status).toBe('pending');
    expect(created.deliveries.find((d) => d.channel === 'in_app')?.status).toBe('sent');
    expect(created.conversation_instance_id).not.toBeNull();
    const [message] = await world.sql<{ id: string; idempotency_key: string; notification_id: string; status: string }>(`SELECT id, idempotency_key, notification_id, status FROM "${m()}".messages WHERE id = $1`, [whatsapp.message_id]);
    expect(message).toMatchObject({ idempotency_key: `nd:${whatsapp.id}`, notification_id: created.id, status: 'queued' });

    // The enqueue is not the delivery. Barrier: the enqueue command has left messaging's outbox (the
    // relay published it), so messaging is done with the enqueue; with no outcome it is still pending.
    await eventually(async () => (await world.sql(`SELECT 1 FROM "${m()}".outbox_events WHERE event_id = $1 AND published_at IS NOT NULL`, [`messaging.send:${message.id}`])).length === 1);
    expect((await app.get(NotificationsService).get(org, created.id)).deliveries.find((d) => d.channel === 'whatsapp')?.status).toBe('pending');

    await publishEvent(world, OutboxEvents.EntryAccepted, org, entry(message.id, message.idempotency_key, `wamid.${randomUUID()}`));
    await eventually(async () => (await app.get(NotificationsService).get(org, created.id)).deliveries.find((d) => d.channel === 'whatsapp')?.status === 'sent');
    const updates = (await outboxEvents<{ delivery_id: string; status: string }>(world, 'messaging', MessagingEvents.NotificationDeliveryUpdated)).filter((e) => e.payload.data.delivery_id === whatsapp.id);
    expect(updates.map((u) => u.payload.data.status)).toEqual(['sent']);
  });

  it('marks a notification delivery failed when its send fails', async () => {
    const contact = await world.sql<{ id: string }>(`INSERT INTO "${m()}".contacts (organization_id, name, phone, phone_key, created_at, updated_at) VALUES ($1, 'Carla Example', '+5511912349999', '5511912349999', now(), now()) RETURNING id`, [org]);
    await app.get(NotificationsService).upsertTemplate(org, { key: 'code', body: 'Your code is {{code}}', whatsapp_template: { name: 'login_code', language: 'en_US', parameters: ['code'] } });
    const created = await app.get(NotificationsService).create({ organization_id: org, contact_id: contact[0].id, template_key: 'code', variables: { code: '1234' }, channels: ['whatsapp', 'email'] });
    expect(created.deliveries.find((d) => d.channel === 'email')).toMatchObject({ status: 'failed', error_code: 'no_address' });
    const whatsapp = created.deliveries.find((d) => d.channel === 'whatsapp')!;
    const [message] = await world.sql<{ id: string; idempotency_key: string }>(`SELECT id, idempotency_key FROM "${m()}".messages WHERE id = $1`, [whatsapp.message_id]);
    await publishEvent(world, OutboxEvents.EntryFailed, org, { ...entry(message.id, message.idempotency_key), classification: 'permanent', error_code: '131026', attempts: 1 });
    await eventually(async () => (await app.get(NotificationsService).get(org, created.id)).deliveries.find((d) => d.channel === 'whatsapp')?.status === 'failed');
  });
});
