import { DeadLetterAdmin } from '@touchpoint/bus';
import { randomUUID } from 'node:crypto';
import { OutboxCommands, OutboxEvents, OutboxRpc } from '@touchpoint/contracts';
import { AppError } from '@touchpoint/errors';
import { RpcClient, UnitOfWork } from '@touchpoint/runtime';
import { aWhatsAppNumber, createTestWorld, eventually, type TestWorld } from '@touchpoint/testing';
import { PAIR_WIRE_MARGIN_MS } from '../../apps/outbox-dispatcher/src/drain/dispatch.service.js';
import { type Dispatcher, SandboxHandle, startDispatcher, textTo } from './harness.js';

/** Between two sends on a pair the dispatcher leaves the seed's 6500 ms plus its wire margin (`PAIR_WIRE_MARGIN_MS`). */
const PAIR_GAP_MS = 6500 + PAIR_WIRE_MARGIN_MS;

/**
 * The dispatcher against the real database, broker and the Meta sandbox, with a hand-moved clock:
 * pacing, idempotency, classification outcomes, backoff floors, read receipts, suppressions,
 * ambiguous sends and their resolution, cancel (seed 004 "Outbound WhatsApp outbox & dispatcher").
 */
describe('outbox dispatcher', () => {
  let world: TestWorld;
  let sandbox: SandboxHandle;
  let d: Dispatcher;
  let org: string;
  let phoneNumberId: string;
  let senderId: string;
  let seq = 0;

  const schema = () => world.schema('outbox-dispatcher');
  const entry = async (id: string) => (await world.sql<Record<string, unknown> & { payload: { body?: string }; pacing_key: string; next_attempt_at: Date }>(`SELECT * FROM "${schema()}".message_outbox WHERE id = $1`, [id]))[0];
  const attempts = async (id: string) => world.sql<Record<string, unknown> & { started_at: Date; body: { error: { code: number; message: string } } }>(`SELECT * FROM "${schema()}".message_outbox_attempts WHERE entry_id = $1 ORDER BY id`, [id]);
  const events = async (entryId: string) =>
    (await world.sql<{ type: string; payload: { data: Record<string, unknown> } }>(`SELECT type, payload FROM "${schema()}".outbox_events WHERE payload->'data'->>'entry_id' = $1 AND type LIKE 'outbox.entry.%' ORDER BY id`, [entryId])).map((r) => ({
      type: r.type,
      data: r.payload.data,
    }));
  const drain = () => d.drain.drain(5000);
  /** A fresh Brazilian mobile per test, so pairs never collide. */
  const newNumber = () => `55119${String(70000000 + ++seq * 7919).slice(-8)}`;

  beforeAll(async () => {
    world = await createTestWorld('outbox');
    sandbox = await SandboxHandle.start();
    d = await startDispatcher(world, sandbox);
    org = `org-${randomUUID()}`;
    phoneNumberId = '100000000000002';
    senderId = await aWhatsAppNumber(d, org, phoneNumberId);
  });
  afterAll(async () => {
    await world.close();
    await sandbox.close();
  });
  beforeEach(async () => {
    await sandbox.reset();
    await sandbox.post('/sandbox/meta/settings', { status_webhooks: false });
  });

  describe('enqueue', () => {
    it('writes one row and sends once when the same key is enqueued twice', async () => {
      const to = newNumber();
      const data = textTo(org, to);
      const first = await d.enqueue.enqueue(data);
      const second = await d.enqueue.enqueue({ ...data, payload: { type: 'text', body: 'a different body' } });
      expect(first.created).toBe(true);
      expect(second).toEqual({ entry_id: first.entry_id, status: 'pending', created: false });
      const rows = await world.sql(`SELECT id FROM "${schema()}".message_outbox WHERE idempotency_key = $1`, [data.idempotency_key]);
      expect(rows).toHaveLength(1);
      await drain();
      d.clock.advance(60_000);
      await drain();
      expect(await sandbox.received(to)).toHaveLength(1);
      expect((await entry(first.entry_id)).status).toBe('accepted');
    });

    it('answers the same entry through the RPC, with created false the second time', async () => {
      const rpc = d.app.get(RpcClient);
      const data = textTo(org, newNumber());
      const a = await rpc.callUnchecked<{ entry_id: string; created: boolean }>('outbox-dispatcher', OutboxRpc.Enqueue, data);
      const b = await rpc.callUnchecked<{ entry_id: string; created: boolean }>('outbox-dispatcher', OutboxRpc.Enqueue, data);
      expect(a.created).toBe(true);
      expect(b).toMatchObject({ entry_id: a.entry_id, created: false });
    });

    it('takes the outbox.enqueue and outbox.cancel commands from the bus', async () => {
      const uow = d.app.get(UnitOfWork);
      const data = textTo(org, newNumber());
      const cancelled = textTo(org, newNumber());
      await uow.run((tx) =>
        tx.publish([
          { event_id: `cmd:${data.idempotency_key}`, type: OutboxCommands.Enqueue, organization_id: org, data: data },
          { event_id: `cmd:${cancelled.idempotency_key}`, type: OutboxCommands.Enqueue, organization_id: org, data: cancelled },
        ]),
      );
      const keyed = async (key: string) => (await world.sql<Record<string, unknown>>(`SELECT * FROM "${schema()}".message_outbox WHERE idempotency_key = $1`, [key]))[0];
      await eventually(async () => (await keyed(data.idempotency_key)) && (await keyed(cancelled.idempotency_key)));
      await uow.run((tx) => tx.publish({ event_id: `cancel:${cancelled.idempotency_key}`, type: OutboxCommands.Cancel, organization_id: org, data: { organization_id: org, idempotency_key: cancelled.idempotency_key } }));
      await eventually(async () => (await keyed(cancelled.idempotency_key)).status === 'cancelled');
      await drain();
      expect((await keyed(data.idempotency_key)).status).toBe('accepted');
      expect(await sandbox.received(cancelled.to)).toHaveLength(0);
    });

    it('answers a rejected outbox.enqueue command with outbox.entry.failed (enqueue stage), queues nothing and parks nothing', async () => {
      const uow = d.app.get(UnitOfWork);
      const data = { ...textTo(org, newNumber()), sender_id: randomUUID(), log_context: { message_id: 'm-rejected' } };
      await uow.run((tx) => tx.publish({ event_id: `cmd:${data.idempotency_key}`, type: OutboxCommands.Enqueue, organization_id: org, data: data }));
      const failed = await eventually(async () => (await world.sql<{ payload: { data: Record<string, unknown> } }>(`SELECT payload FROM "${schema()}".outbox_events WHERE type = 'outbox.entry.failed' AND payload->'data'->>'idempotency_key' = $1`, [data.idempotency_key]))[0]);
      expect(failed.payload.data).toMatchObject({ entry_id: '', error_code: 'sender_not_found', attempts: 0, classification: null, log_context: { message_id: 'm-rejected' } });
      expect(await world.sql(`SELECT 1 FROM "${schema()}".message_outbox WHERE idempotency_key = $1`, [data.idempotency_key])).toHaveLength(0);
      expect((await new DeadLetterAdmin(world.amqpUrl, world.namespace).list('outbox-dispatcher')).filter((m) => m.event_id === `cmd:${data.idempotency_key}`)).toHaveLength(0);
    });

    it.each([
      ['an unknown payload type', { payload: { type: 'sticker' } }, 'invalid_payload'],
      ['an empty text', { payload: { type: 'text', body: '' } }, 'invalid_payload'],
      ['media with two sources', { payload: { type: 'media', media_type: 'image', link: 'https://x.example/a.png', media_id: '1' } }, 'invalid_payload'],
      ['a read receipt with another key', { payload: { type: 'read_receipt', message_id: 'wamid.X' }, idempotency_key: 'r1' }, 'invalid_payload'],
      ['a recipient that is not a number', { to: 'ana@example.com' }, 'invalid_recipient'],
      ['an unknown sender', { sender_id: randomUUID() }, 'sender_not_found'],
      // Every channel has an adapter now (email: Nylas, linkedin: Unipile); an organization without a mailbox has no sender.
      ['an email from an organization with no mailbox', { channel: 'email', to: 'ana@example.com' }, 'sender_not_found'],
    ])('rejects %s with %s and writes nothing', async (_name, patch, code) => {
      const data = { ...textTo(org, newNumber()), ...patch } as Parameters<typeof d.enqueue.enqueue>[0];
      const error = await d.enqueue.enqueue(data).catch((e) => e);
      expect(error).toBeInstanceOf(AppError);
      expect(error.code).toBe(code);
      expect(await world.sql(`SELECT id FROM "${schema()}".message_outbox WHERE idempotency_key = $1`, [data.idempotency_key])).toHaveLength(0);
    });

    it('puts +55 92 98888-7777 and 5592988887777 on one pair, keeping each caller address on the wire', async () => {
      const a = await d.enqueue.enqueue(textTo(org, '+55 92 98888-7777'));
      const b = await d.enqueue.enqueue(textTo(org, '5592988887777'));
      const [ea, eb] = [await entry(a.entry_id), await entry(b.entry_id)];
      expect(ea.pair_id).toBe(eb.pair_id);
      expect(ea.pacing_key).toBe('5592988887777');
      await drain();
      expect((await sandbox.received('5592988887777')).map((c) => c.body.to)).toEqual(['+55 92 98888-7777']);
      d.clock.advance(PAIR_GAP_MS - 1);
      await drain();
      expect(await sandbox.received('5592988887777')).toHaveLength(1);
      d.clock.advance(1);
      await drain();
      expect((await sandbox.received('5592988887777')).map((c) => c.body.to)).toEqual(['+55 92 98888-7777', '5592988887777']);
      const starts = (await world.sql<{ started_at: Date }>(`SELECT started_at FROM "${schema()}".message_outbox_attempts WHERE pair_id = $1 ORDER BY started_at`, [ea.pair_id])).map((r) => r.started_at.getTime());
      expect(starts[1] - starts[0]).toBe(PAIR_GAP_MS);
    });
  });

  describe('drain', () => {
    it('sends different pairs at once but the same pair only every 6500 ms (and the wire margin), FIFO', async () => {
      const x = newNumber();
      const y = newNumber();
      const ids = [];
      for (const to of [x, x, x, y]) ids.push((await d.enqueue.enqueue(textTo(org, to))).entry_id);
      const run = await drain();
      expect((await sandbox.received(x)).length + (await sandbox.received(y)).length).toBe(2);
      expect(run.workRemains).toBe(true);
      expect(run.nextDueAt?.getTime()).toBe(d.clock.now().getTime() + PAIR_GAP_MS);
      d.clock.advance(PAIR_GAP_MS);
      await drain();
      d.clock.advance(PAIR_GAP_MS);
      await drain();
      expect((await sandbox.received(x)).map((c) => (c.body.text as { body: string }).body)).toEqual(await Promise.all(ids.slice(0, 3).map(async (id) => (await entry(id)).payload.body)));
    });

    it('stamps the entry id into biz_opaque_callback_data and stores the wamid', async () => {
      const { entry_id } = await d.enqueue.enqueue(textTo(org, newNumber()));
      await drain();
      const row = await entry(entry_id);
      const [call] = await sandbox.received(row.pacing_key);
      expect(call.body.biz_opaque_callback_data).toBe(entry_id);
      expect(row.provider_message_id).toBe(call.provider_id);
      expect(await events(entry_id)).toEqual([expect.objectContaining({ type: OutboxEvents.EntryAccepted, data: expect.objectContaining({ provider_message_id: call.provider_id, log_context: row.log_context }) })]);
    });

    it('never sends to a suppressed recipient', async () => {
      const to = newNumber();
      await d.suppressions.add({ organization_id: org, channel: 'whatsapp', value: `+${to}`, reason: 'opt-out' });
      const { entry_id } = await d.enqueue.enqueue(textTo(org, to));
      await drain();
      d.clock.advance(3_600_000);
      await drain();
      expect(await sandbox.received(to)).toHaveLength(0);
      expect(await entry(entry_id)).toMatchObject({ status: 'failed', last_classification: 'suppressed', attempts: 0 });
      expect((await events(entry_id)).map((e) => e.type)).toEqual([OutboxEvents.EntryFailed]);
    });

    it('honours a Retry-After longer than the backoff', async () => {
      const to = newNumber();
      await sandbox.fault({ kind: 'error', code: 131056, retry_after: 120, match: { wa_id: to } });
      const { entry_id } = await d.enqueue.enqueue(textTo(org, to));
      const t0 = d.clock.now().getTime();
      await drain();
      const row = await entry(entry_id);
      expect(row).toMatchObject({ status: 'pending', attempts: 1, last_classification: 'rate_limited', last_error_code: '131056', last_http_status: 400 });
      expect(row.next_attempt_at.getTime() - t0).toBe(120_000);
      d.clock.advance(10_000); // the plain backoff would retry here
      await drain();
      expect(await sandbox.received(to)).toHaveLength(1);
      d.clock.advance(110_000);
      await drain();
      expect(await entry(entry_id)).toMatchObject({ status: 'accepted', attempts: 2 });
      expect((await attempts(entry_id)).map((a) => [a.outcome, a.retry_after_ms])).toEqual([
        ['retry', 120_000],
        ['accepted', null],
      ]);
    });

    it('backs off 10 s, 20 s, 40 s, 80 s and fails after 5 attempts of a transient error', async () => {
      const to = newNumber();
      await sandbox.fault({ kind: 'error', code: 131000, times: 5, match: { wa_id: to } });
      const { entry_id } = await d.enqueue.enqueue(textTo(org, to));
      for (const wait of [0, 10_000, 20_000, 40_000, 80_000]) {
        d.clock.advance(wait);
        await drain();
      }
      expect(await entry(entry_id)).toMatchObject({ status: 'failed', attempts: 5, last_classification: 'transient' });
      const starts = (await attempts(entry_id)).map((a) => a.started_at.getTime());
      expect(starts.slice(1).map((s, i) => s - starts[i])).toEqual([10_000, 20_000, 40_000, 80_000]);
      expect((await events(entry_id)).map((e) => e.type)).toEqual([OutboxEvents.EntryFailed]);
    });

    it('fails a permanent error at once with the provider code and an account restriction the same way', async () => {
      const a = newNumber();
      const b = newNumber();
      await sandbox.fault({ kind: 'error', code: 131026, match: { wa_id: a } }, { kind: 'error', code: 131048, match: { wa_id: b } });
      const ea = await d.enqueue.enqueue(textTo(org, a));
      const eb = await d.enqueue.enqueue(textTo(org, b));
      await drain();
      expect(await entry(ea.entry_id)).toMatchObject({ status: 'failed', attempts: 1, last_classification: 'recipient_undeliverable', last_error_code: '131026' });
      expect(await entry(eb.entry_id)).toMatchObject({ status: 'failed', attempts: 1, last_classification: 'account_restricted', last_error_code: '131048' });
      const [attempt] = await attempts(ea.entry_id);
      expect(attempt.body.error.code).toBe(131026);
    });

    it('records the attempt of an error answer whose text holds half an emoji (a lone \\ud83d escape)', async () => {
      const to = newNumber();
      await sandbox.fault({ kind: 'error', code: 131026, message: 'Message undeliverable \uD83D', match: { wa_id: to } });
      const { entry_id } = await d.enqueue.enqueue(textTo(org, to));
      await drain();
      expect(await entry(entry_id)).toMatchObject({ status: 'failed', attempts: 1, last_classification: 'recipient_undeliverable', last_error_code: '131026' });
      const [attempt] = await attempts(entry_id);
      expect(attempt.body.error.message).toBe('(#131026) Message undeliverable \uFFFD');
    });

    it('does not retry a read receipt that failed', async () => {
      const to = newNumber();
      await sandbox.fault({ kind: 'error', code: 131000, match: { type: 'read' } });
      const wamid = `wamid.IN${randomUUID()}`;
      const { entry_id } = await d.enqueue.enqueue({ ...textTo(org, to), idempotency_key: `read:${wamid}`, payload: { type: 'read_receipt', message_id: wamid } });
      await drain();
      d.clock.advance(3_600_000);
      await drain();
      expect(await entry(entry_id)).toMatchObject({ status: 'failed', attempts: 1, max_attempts: 1, last_classification: 'transient' });
      expect((await sandbox.received()).filter((c) => c.body.message_id === wamid)).toHaveLength(1);
    });

    it('lets a read receipt ride the recipient pair', async () => {
      const to = newNumber();
      const text = await d.enqueue.enqueue(textTo(org, to));
      const receipt = await d.enqueue.enqueue({ ...textTo(org, `+${to}`), idempotency_key: `read:wamid.R${seq}`, payload: { type: 'read_receipt', message_id: `wamid.R${seq}` } });
      expect((await entry(receipt.entry_id)).pair_id).toBe((await entry(text.entry_id)).pair_id);
    });

    it('requeues with backoff when the media upload fails during preparation, stamping the pacing gate', async () => {
      const to = newNumber();
      await sandbox.fault({ kind: 'error', code: 131000, match: { type: 'media' } });
      const { entry_id } = await d.enqueue.enqueue({ ...textTo(org, to), payload: { type: 'media', media_type: 'document', upload: { data_base64: Buffer.from('%PDF-1.4 fake').toString('base64'), mime_type: 'application/pdf', filename: 'invoice.pdf' }, caption: 'Invoice' } });
      await drain();
      expect(await entry(entry_id)).toMatchObject({ status: 'pending', attempts: 1 });
      expect((await attempts(entry_id)).map((a) => a.outcome)).toEqual(['requeued']);
      expect(await sandbox.received(to)).toHaveLength(0);
      d.clock.advance(10_000);
      await drain();
      const [sent] = await sandbox.received(to);
      expect(sent.body.document).toEqual({ id: expect.any(String), caption: 'Invoice', filename: 'invoice.pdf' });
      expect(await entry(entry_id)).toMatchObject({ status: 'accepted', attempts: 2, prepared: { media_id: (sent.body.document as { id: string }).id } });
    });
  });

  describe('ambiguous sends', () => {
    it('parks a timed-out send as ambiguous, never resends it, and settles it accepted on a delivered status', async () => {
      const to = newNumber();
      await sandbox.fault({ kind: 'timeout', hold_ms: 3000, match: { wa_id: to } });
      const ambiguous = await d.enqueue.enqueue(textTo(org, to));
      const behind = await d.enqueue.enqueue(textTo(org, to));
      await drain();
      expect(await entry(ambiguous.entry_id)).toMatchObject({ status: 'ambiguous', attempts: 1, last_classification: 'ambiguous' });
      // The entry behind it is not blocked by it (it left the FIFO) and not failed because of it.
      d.clock.advance(PAIR_GAP_MS);
      await drain();
      expect((await entry(behind.entry_id)).status).toBe('accepted');
      d.clock.advance(86_400_000);
      await drain();
      await d.sweep.sweep();
      const calls = await sandbox.received(to);
      expect(calls.filter((c) => c.body.biz_opaque_callback_data === ambiguous.entry_id)).toHaveLength(1);
      expect((await entry(ambiguous.entry_id)).status).toBe('ambiguous');

      const wamid = calls[0].provider_id!;
      const result = await d.resolution.recordWhatsAppStatuses({ phone_number_id: phoneNumberId, statuses: [{ id: wamid, status: 'delivered', timestamp: '1750263773', recipient_id: to, biz_opaque_callback_data: ambiguous.entry_id }] });
      expect(result.outcomes).toEqual([{ id: wamid, status: 'delivered', outcome: 'resolved' }]);
      expect(await entry(ambiguous.entry_id)).toMatchObject({ status: 'accepted', provider_message_id: wamid, resolution: 'accepted', resolved_by: 'provider' });
      expect((await events(ambiguous.entry_id)).map((e) => [e.type, e.data.resolution])).toEqual([
        [OutboxEvents.EntryAmbiguous, undefined],
        [OutboxEvents.EntryResolved, 'accepted'],
      ]);
      expect(await sandbox.received(to)).toHaveLength(2);
    });

    it('settles an ambiguous send failed on a failed status, and reports the other outcomes', async () => {
      const to = newNumber();
      await sandbox.fault({ kind: 'drop', match: { wa_id: to } });
      const { entry_id } = await d.enqueue.enqueue(textTo(org, to));
      await drain();
      expect((await entry(entry_id)).status).toBe('ambiguous');
      const wamid = (await sandbox.received(to))[0].provider_id!;
      const statuses = (status: string, id = wamid, token = entry_id) =>
        d.resolution.recordWhatsAppStatuses({ phone_number_id: phoneNumberId, statuses: [{ id, status, timestamp: '1751142888', biz_opaque_callback_data: token, errors: status === 'failed' ? [{ code: 131049, title: 'not delivered' }] : undefined }] });
      expect((await statuses('deleted')).outcomes[0].outcome).toBe('invalid_resolution');
      expect((await statuses('failed')).outcomes[0].outcome).toBe('resolved_failed');
      expect(await entry(entry_id)).toMatchObject({ status: 'failed', resolution: 'rejected', last_error_code: '131049' });
      expect((await statuses('read')).outcomes[0].outcome).toBe('not_ambiguous');
      expect((await statuses('sent', `${wamid}-x`, randomUUID())).outcomes[0].outcome).toBe('not_found');
      expect((await statuses('failed')).outcomes[0].outcome).toBe('duplicate');
      expect((await events(entry_id)).map((e) => [e.type, e.data.resolution])).toEqual([
        [OutboxEvents.EntryAmbiguous, undefined],
        [OutboxEvents.EntryResolved, 'rejected'],
      ]);
    });

    it('lets an operator resolve an ambiguous entry with a note', async () => {
      const to = newNumber();
      await sandbox.fault({ kind: 'drop', match: { wa_id: to } });
      const { entry_id } = await d.enqueue.enqueue(textTo(org, to));
      await drain();
      const listed = await d.resolution.listAmbiguous({ organization_id: org });
      expect(listed.items.map((e) => e.id)).toContain(entry_id);
      expect(await d.resolution.resolveByOperator({ organization_id: org, entry_id, status: 'accepted', note: '' })).toMatchObject({ outcome: 'invalid_resolution' });
      expect(await d.resolution.resolveByOperator({ organization_id: 'other-org', entry_id, status: 'accepted', note: 'seen on phone' })).toMatchObject({ outcome: 'not_found' });
      expect(await d.resolution.resolveByOperator({ organization_id: org, entry_id, status: 'accepted', note: 'seen on the phone', actor: 'ops@example.com' })).toEqual({ outcome: 'resolved', entry_id, status: 'accepted' });
      expect(await entry(entry_id)).toMatchObject({ status: 'accepted', resolution_note: 'seen on the phone', resolved_by: 'operator:ops@example.com' });
    });
  });

  describe('cancel', () => {
    it('cancels a pending entry by key, and not a settled one', async () => {
      const data = textTo(org, newNumber());
      const { entry_id } = await d.enqueue.enqueue(data);
      expect(await d.enqueue.cancel({ organization_id: org, idempotency_key: data.idempotency_key })).toEqual({ outcome: 'cancelled', entry_id, status: 'cancelled' });
      await drain();
      expect(await sandbox.received(data.to)).toHaveLength(0);
      expect((await events(entry_id)).map((e) => e.type)).toEqual([OutboxEvents.EntryCancelled]);

      const sent = textTo(org, newNumber());
      await d.enqueue.enqueue(sent);
      await drain();
      expect(await d.enqueue.cancel({ organization_id: org, idempotency_key: sent.idempotency_key })).toMatchObject({ outcome: 'not_cancellable', status: 'accepted' });
    });

    it('writes an entry whose cancel arrived first as cancelled, and never sends it (the reply wins)', async () => {
      const late = textTo(org, newNumber());
      expect(await d.enqueue.cancel({ organization_id: org, idempotency_key: late.idempotency_key })).toEqual({ outcome: 'cancelled_in_advance' });
      const { entry_id, status, created } = await d.enqueue.enqueue(late);
      expect({ status, created }).toEqual({ status: 'cancelled', created: true });
      await drain();
      expect(await sandbox.received(late.to)).toHaveLength(0);
      expect((await events(entry_id)).map((e) => e.type)).toEqual([OutboxEvents.EntryCancelled]);
      // The same enqueue redelivered stays the one cancelled entry.
      expect(await d.enqueue.enqueue(late)).toEqual({ entry_id, status: 'cancelled', created: false });
    });

    it('lets exactly one of a racing cancel and enqueue decide, and the entry is never sent', async () => {
      const raced = Array.from({ length: 10 }, () => textTo(org, newNumber()));
      await Promise.all(raced.flatMap((m) => [d.enqueue.enqueue(m), d.enqueue.cancel({ organization_id: org, idempotency_key: m.idempotency_key })]));
      await drain();
      for (const m of raced) {
        expect(await sandbox.received(m.to)).toHaveLength(0);
        const [row] = await world.sql<{ status: string }>(`SELECT status FROM "${schema()}".message_outbox WHERE organization_id = $1 AND idempotency_key = $2`, [org, m.idempotency_key]);
        expect(row.status).toBe('cancelled');
      }
    });
  });

  describe('senders', () => {
    it('never returns the token and stores it encrypted', async () => {
      const view = await d.senders.get(org, senderId);
      expect(JSON.stringify(view)).not.toContain(`token-${phoneNumberId}`);
      expect(view).toMatchObject({ has_credentials: true, is_default: true, status: 'connected' });
      const [row] = await world.sql<{ credentials_encrypted: string }>(`SELECT credentials_encrypted FROM "${schema()}".senders WHERE id = $1`, [senderId]);
      expect(row.credentials_encrypted).not.toContain('token');
      expect((await d.senders.credentialsFor(senderId))?.secrets.access_token).toBe(`token-${phoneNumberId}`);
    });

    it('refuses to enqueue for a disconnected sender and fails queued entries of a removed one', async () => {
      const other = `org-${randomUUID()}`;
      const id = await aWhatsAppNumber(d, other, '100000000000099');
      const queued = await d.enqueue.enqueue(textTo(other, newNumber()));
      await d.senders.remove(other, id);
      await drain();
      expect(await entry(queued.entry_id)).toMatchObject({ status: 'failed', last_classification: 'sender_unavailable' });
      const error = await d.enqueue.enqueue(textTo(other, newNumber())).catch((e) => e);
      expect(error.code).toBe('sender_not_found');
      const types = (await world.sql<{ type: string }>(`SELECT type FROM "${schema()}".outbox_events WHERE payload->'data'->>'sender_id' = $1 AND type LIKE 'outbox.sender.%' ORDER BY id`, [id])).map((r) => r.type);
      expect(types).toEqual([OutboxEvents.SenderConnected, OutboxEvents.SenderRemoved]);
    });
  });
});
