import { jest } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { OutboxEvents, type WhatsAppStatus } from '@touchpoint/contracts';
import { UnitOfWork } from '@touchpoint/runtime';
import { aWhatsAppNumber, createTestWorld, eventually, type TestWorld } from '@touchpoint/testing';
import { type Dispatcher, SandboxHandle, startDispatcher, textTo } from './harness.js';

interface Sent {
  entryId: string;
  wamid: string;
  to: string;
  key: string;
  logContext: Record<string, string | number>;
}

/**
 * Meta's status webhooks at the dispatcher (seed 004 "Ambiguity is resolved by correlation"): a
 * batch is stored, correlated and published by one statement, and only statuses that settle an
 * ambiguous send take a transaction. Real database and broker, the Meta sandbox, a hand-moved clock.
 */
describe('ResolutionService.recordWhatsAppStatuses', () => {
  let world: TestWorld;
  let sandbox: SandboxHandle;
  let d: Dispatcher;
  let org: string;
  let otherOrg: string;
  const phoneNumberId = '100000000000031';
  const otherPhoneNumberId = '100000000000032';
  let seq = 0;

  const schema = () => world.schema('outbox-dispatcher');
  const entry = async (id: string) => (await world.sql<Record<string, unknown>>(`SELECT * FROM "${schema()}".message_outbox WHERE id = $1`, [id]))[0];
  const statusRows = (wamids: string[]) =>
    world.sql<{ provider_message_id: string; status: string; entry_id: string | null; resolution_outcome: string; correlation: string | null; account_id: string }>(
      `SELECT provider_message_id, status, entry_id, resolution_outcome, correlation, account_id FROM "${schema()}".provider_statuses WHERE provider_message_id = ANY($1) ORDER BY provider_message_id, status`,
      [wamids],
    );
  const statusEvents = async (wamids: string[]) =>
    world.sql<{ event_id: string; organization_id: string; payload: { organization_id: string; data: Record<string, unknown> } }>(
      `SELECT event_id, organization_id, payload FROM "${schema()}".outbox_events WHERE type = $1 AND payload->'data'->>'provider_message_id' = ANY($2) ORDER BY event_id`,
      [OutboxEvents.ProviderStatusRecorded, wamids],
    );
  const entryEvents = async (entryId: string) =>
    (await world.sql<{ type: string; payload: { data: Record<string, unknown> } }>(`SELECT type, payload FROM "${schema()}".outbox_events WHERE payload->'data'->>'entry_id' = $1 AND type LIKE 'outbox.entry.%' ORDER BY id`, [entryId])).map((r) => [
      r.type,
      r.payload.data.resolution,
    ]);
  const record = (statuses: WhatsAppStatus[], phone = phoneNumberId) => d.resolution.recordWhatsAppStatuses({ phone_number_id: phone, statuses });
  const newNumber = () => `55119${String(60000000 + ++seq * 7919).slice(-8)}`;
  const status = (s: Sent, name: string, at: number, extra: Partial<WhatsAppStatus> = {}): WhatsAppStatus => ({ id: s.wamid, status: name, timestamp: String(at), recipient_id: s.to, biz_opaque_callback_data: s.entryId, ...extra });

  /** `n` texts to numbers of their own, drained until the sandbox took each one. */
  async function sendMany(n: number): Promise<Sent[]> {
    const sent: Sent[] = [];
    for (let i = 0; i < n; i++) {
      const data = textTo(org, newNumber());
      const { entry_id } = await d.enqueue.enqueue(data);
      sent.push({ entryId: entry_id, wamid: '', to: data.to, key: data.idempotency_key, logContext: data.log_context! });
    }
    await eventually(async () => {
      await d.drain.drain(5000);
      return (await Promise.all(sent.map((s) => entry(s.entryId)))).every((e) => e.status === 'accepted');
    });
    for (const s of sent) s.wamid = (await entry(s.entryId)).provider_message_id as string;
    return sent;
  }

  /** A send whose connection broke after Meta took it: parked `ambiguous`. */
  async function ambiguousSend(): Promise<Sent> {
    const data = textTo(org, newNumber());
    await sandbox.fault({ kind: 'drop', match: { wa_id: data.to } });
    const { entry_id } = await d.enqueue.enqueue(data);
    await d.drain.drain(5000);
    expect(await entry(entry_id)).toMatchObject({ status: 'ambiguous' });
    const [call] = await sandbox.received(data.to);
    return { entryId: entry_id, wamid: call.provider_id!, to: data.to, key: data.idempotency_key, logContext: data.log_context! };
  }

  beforeAll(async () => {
    world = await createTestWorld('outbox_statuses');
    sandbox = await SandboxHandle.start();
    // Long enough for a status to arrive while a held send is still in flight.
    d = await startDispatcher(world, sandbox, { WHATSAPP_SEND_TIMEOUT_MS: '2000' });
    org = `org-${randomUUID()}`;
    otherOrg = `org-${randomUUID()}`;
    await aWhatsAppNumber(d, org, phoneNumberId);
    await aWhatsAppNumber(d, otherOrg, otherPhoneNumberId);
  });
  afterAll(async () => {
    await world.close();
    await sandbox.close();
  });
  beforeEach(async () => {
    await sandbox.reset();
    await sandbox.post('/sandbox/meta/settings', { status_webhooks: false });
  });

  it('stores a batch of sent, delivered and read for many entries with one event each, and leaves the accepted entries as they were', async () => {
    const sent = await sendMany(8);
    const before = await Promise.all(sent.map((s) => entry(s.entryId)));
    d.clock.advance(60_000);
    const batch = sent.flatMap((s, i) => [status(s, 'sent', 1751000000 + i), status(s, 'delivered', 1751000100 + i), status(s, 'read', 1751000200 + i)]);
    const result = await record(batch);
    expect(result.stored).toBe(24);
    expect(result.outcomes).toEqual(batch.map((s) => ({ id: s.id, status: s.status, outcome: 'not_ambiguous' })));

    const wamids = sent.map((s) => s.wamid);
    const rows = await statusRows(wamids);
    expect(rows).toHaveLength(24);
    for (const s of sent) {
      expect(rows.filter((r) => r.provider_message_id === s.wamid)).toEqual(['delivered', 'read', 'sent'].map((name) => ({ provider_message_id: s.wamid, status: name, entry_id: s.entryId, resolution_outcome: 'not_ambiguous', correlation: s.entryId, account_id: phoneNumberId })));
    }
    const events = await statusEvents(wamids);
    expect(events).toHaveLength(24);
    const third = sent[2];
    expect(events.find((e) => e.event_id === `${OutboxEvents.ProviderStatusRecorded}:${third.wamid}:read`)).toEqual({
      event_id: `${OutboxEvents.ProviderStatusRecorded}:${third.wamid}:read`,
      organization_id: org,
      payload: {
        event_id: `${OutboxEvents.ProviderStatusRecorded}:${third.wamid}:read`,
        type: OutboxEvents.ProviderStatusRecorded,
        organization_id: org,
        occurred_at: d.clock.now().toISOString(),
        data: {
          channel: 'whatsapp',
          provider_message_id: third.wamid,
          status: 'read',
          provider_timestamp: new Date(1751000202 * 1000).toISOString(),
          recipient: third.to,
          entry_id: third.entryId,
          idempotency_key: third.key,
          log_context: third.logContext,
          error_code: null,
          error_message: null,
          error_details: null,
        },
      },
    });
    expect(await Promise.all(sent.map((s) => entry(s.entryId)))).toEqual(before);
    for (const s of sent) expect(await entryEvents(s.entryId)).toEqual([[OutboxEvents.EntryAccepted, undefined]]);
  });

  it('takes statuses out of order and repeated, in one batch and across batches, with the result of one ordered delivery', async () => {
    const [a, b] = await sendMany(2);
    const first = await record([status(a, 'read', 1751000300), status(a, 'sent', 1751000100), status(a, 'read', 1751000300), status(b, 'delivered', 1751000200)]);
    expect(first.outcomes.map((o) => o.outcome)).toEqual(['not_ambiguous', 'not_ambiguous', 'duplicate', 'not_ambiguous']);
    expect(first.stored).toBe(3);
    const second = await record([status(b, 'sent', 1751000100), status(a, 'delivered', 1751000200), status(a, 'sent', 1751000100), status(b, 'read', 1751000300)]);
    expect(second.outcomes.map((o) => o.outcome)).toEqual(['not_ambiguous', 'not_ambiguous', 'duplicate', 'not_ambiguous']);
    expect(second.stored).toBe(3);

    const rows = await statusRows([a.wamid, b.wamid]);
    expect(rows.map((r) => [r.provider_message_id, r.status, r.entry_id])).toEqual([a, b].sort((x, y) => x.wamid.localeCompare(y.wamid)).flatMap((s) => ['delivered', 'read', 'sent'].map((name) => [s.wamid, name, s.entryId])));
    const events = await statusEvents([a.wamid, b.wamid]);
    expect(events.map((e) => [e.payload.data.provider_message_id, e.payload.data.status, e.payload.data.entry_id])).toEqual(
      [a, b].flatMap((s) => ['delivered', 'read', 'sent'].map((name) => [s.wamid, name, s.entryId])).sort((x, y) => `${x[0]}:${x[1]}`.localeCompare(`${y[0]}:${y[1]}`)),
    );
  });

  it('records a failed status with its error code, message and details, found by its provider id when it carries no token', async () => {
    const [s] = await sendMany(1);
    const error = { code: 131026, title: 'Message undeliverable', message: 'Message undeliverable.', error_data: { details: 'The recipient is not a WhatsApp user.' } };
    const result = await record([{ id: s.wamid, status: 'failed', timestamp: '1751000400', recipient_id: s.to, errors: [error] }]);
    expect(result.outcomes).toEqual([{ id: s.wamid, status: 'failed', outcome: 'no_correlation' }]);
    expect(await statusRows([s.wamid])).toEqual([{ provider_message_id: s.wamid, status: 'failed', entry_id: s.entryId, resolution_outcome: 'no_correlation', correlation: null, account_id: phoneNumberId }]);
    const [event] = await statusEvents([s.wamid]);
    expect(event.payload.data).toMatchObject({ status: 'failed', entry_id: s.entryId, idempotency_key: s.key, error_code: '131026', error_message: 'Message undeliverable.', error_details: 'The recipient is not a WhatsApp user.' });
    // The send was accepted: a later failure is news for messaging, not a settle of the entry.
    expect(await entry(s.entryId)).toMatchObject({ status: 'accepted', last_error_code: null });
  });

  it('settles an ambiguous entry through the transactional path, beside statuses of the same batch that need none', async () => {
    const [plain] = await sendMany(1);
    const ambiguous = await ambiguousSend();
    const rejected = await ambiguousSend();
    const result = await record([
      status(plain, 'sent', 1751000500),
      status(ambiguous, 'sent', 1751000500),
      status(plain, 'delivered', 1751000501),
      status(ambiguous, 'delivered', 1751000501),
      status(rejected, 'failed', 1751000502, { errors: [{ code: 131049, title: 'This message was not delivered to maintain healthy ecosystem engagement.' }] }),
    ]);
    expect(result.outcomes.map((o) => o.outcome)).toEqual(['not_ambiguous', 'resolved', 'not_ambiguous', 'not_ambiguous', 'resolved_failed']);
    expect(result.stored).toBe(5);

    expect(await entry(ambiguous.entryId)).toMatchObject({ status: 'accepted', provider_message_id: ambiguous.wamid, resolution: 'accepted', resolved_by: 'provider', resolution_note: 'provider: status sent' });
    expect(await entryEvents(ambiguous.entryId)).toEqual([
      [OutboxEvents.EntryAmbiguous, undefined],
      [OutboxEvents.EntryResolved, 'accepted'],
    ]);
    expect(await entry(rejected.entryId)).toMatchObject({ status: 'failed', resolution: 'rejected', last_error_code: '131049' });
    expect(await entryEvents(rejected.entryId)).toEqual([
      [OutboxEvents.EntryAmbiguous, undefined],
      [OutboxEvents.EntryResolved, 'rejected'],
    ]);
    expect((await statusRows([ambiguous.wamid, rejected.wamid])).map((r) => [r.provider_message_id, r.status, r.entry_id, r.resolution_outcome])).toEqual(
      [
        [ambiguous.wamid, 'delivered', ambiguous.entryId, 'not_ambiguous'],
        [ambiguous.wamid, 'sent', ambiguous.entryId, 'resolved'],
        [rejected.wamid, 'failed', rejected.entryId, 'resolved_failed'],
      ].sort((x, y) => `${x[0]}:${x[1]}`.localeCompare(`${y[0]}:${y[1]}`)),
    );
    const events = await statusEvents([plain.wamid, ambiguous.wamid, rejected.wamid]);
    expect(events).toHaveLength(5);
    expect(events.every((e) => e.organization_id === org && e.payload.data.entry_id !== null)).toBe(true);
  });

  it('stores evidence on an entry still sending (the last status of the batch), and the dispatcher settles the send by it', async () => {
    const data = textTo(org, newNumber());
    await sandbox.fault({ kind: 'timeout', hold_ms: 4000, match: { wa_id: data.to } });
    const { entry_id } = await d.enqueue.enqueue(data);
    const draining = d.drain.drain(10_000);
    await eventually(async () => (await sandbox.received(data.to)).length === 1);
    expect(await entry(entry_id)).toMatchObject({ status: 'sending' });
    const wamid = `wamid.evidence-${randomUUID()}`;
    const s: Sent = { entryId: entry_id, wamid, to: data.to, key: data.idempotency_key, logContext: data.log_context! };
    const result = await record([status(s, 'sent', 1751000600), status(s, 'delivered', 1751000601)]);
    expect(result.outcomes.map((o) => o.outcome)).toEqual(['evidence_recorded', 'evidence_recorded']);
    expect((await entry(entry_id)).evidence).toEqual({ provider_message_id: wamid, status: 'delivered', recorded_at: d.clock.now().toISOString() });
    await draining;
    expect(await entry(entry_id)).toMatchObject({ status: 'accepted', provider_message_id: wamid });
    expect(await entryEvents(entry_id)).toEqual([[OutboxEvents.EntryAccepted, undefined]]);
    expect((await statusEvents([wamid])).map((e) => e.payload.data.entry_id)).toEqual([entry_id, entry_id]);
  });

  it('records a batch that settles nothing in one statement and no transaction, and one that settles an ambiguous entry with one transaction more', async () => {
    const sent = await sendMany(3);
    const ambiguous = await ambiguousSend();
    const uow = d.app.get(UnitOfWork);
    const pool = (uow.dataSource.driver as unknown as { master: pg.Pool }).master;
    const statements = jest.spyOn(pool, 'query');
    const transactions = jest.spyOn(uow, 'run');
    // Other loops of the process share the pool: only the statements about statuses count.
    const statusStatements = () => statements.mock.calls.filter(([sql]) => typeof sql === 'string' && sql.includes('provider_statuses')).length;
    try {
      await record(sent.flatMap((s) => [status(s, 'sent', 1751000550), status(s, 'delivered', 1751000551)]));
      expect(statusStatements()).toBe(1);
      expect(transactions).not.toHaveBeenCalled();
      expect((await record([status(sent[0], 'read', 1751000552), status(ambiguous, 'sent', 1751000552)])).outcomes.map((o) => o.outcome)).toEqual(['not_ambiguous', 'resolved']);
      expect(statusStatements()).toBe(2);
      expect(transactions).toHaveBeenCalledTimes(1);
    } finally {
      statements.mockRestore();
      transactions.mockRestore();
    }
  });

  it('writes the webhooks of one number that arrive while its last write runs in one statement, each answered with its own outcomes; a webhook the statement refuses fails alone', async () => {
    const sent = await sendMany(6);
    const uow = d.app.get(UnitOfWork);
    const pool = (uow.dataSource.driver as unknown as { master: pg.Pool }).master;
    const statements = jest.spyOn(pool, 'query');
    const statusStatements = () => statements.mock.calls.filter(([sql]) => typeof sql === 'string' && sql.includes('INSERT INTO provider_statuses')).length;
    try {
      const results = await Promise.all(sent.map((s, i) => record([status(s, 'delivered', 1751002000 + i)])));
      expect(results).toEqual(sent.map((s) => ({ stored: 1, outcomes: [{ id: s.wamid, status: 'delivered', outcome: 'not_ambiguous' }] })));
      // The first webhook is written at once; the five that came while it ran, together.
      expect(statusStatements()).toBe(2);
      const byWamid = (x: (string | null)[], y: (string | null)[]) => (String(x[0]) < String(y[0]) ? -1 : 1);
      expect((await statusRows(sent.map((s) => s.wamid))).map((r) => [r.provider_message_id, r.status, r.entry_id]).sort(byWamid)).toEqual(sent.map((s) => [s.wamid, 'delivered', s.entryId]).sort(byWamid));
      expect(await statusEvents(sent.map((s) => s.wamid))).toHaveLength(6);

      // PostgreSQL refuses a NUL in jsonb: that webhook's statement fails, and only that webhook with it.
      const refused = { ...status(sent[1], 'read', 1751002101), recipient_id: 'nul\u0000' };
      const settled = await Promise.allSettled([record([status(sent[0], 'read', 1751002100)]), record([refused]), record([status(sent[2], 'read', 1751002102)]), record([status(sent[3], 'read', 1751002103)])]);
      expect(settled.map((r) => (r.status === 'fulfilled' ? r.value.stored : 'refused'))).toEqual([1, 'refused', 1, 1]);
      // The first alone, the three that waited together (refused), then each of them alone.
      expect(statusStatements()).toBe(2 + 1 + 1 + 3);
      expect(
        (await statusRows([sent[0], sent[1], sent[2], sent[3]].map((s) => s.wamid)))
          .filter((r) => r.status === 'read')
          .map((r) => r.provider_message_id)
          .sort(),
      ).toEqual([sent[0], sent[2], sent[3]].map((s) => s.wamid).sort());
      expect((await statusEvents([sent[1].wamid])).map((e) => e.payload.data.status)).toEqual(['delivered']);
    } finally {
      statements.mockRestore();
    }
  });

  it('leaves a status to the transactional path when its sending entry moves under the statement, and settles the entry by it', async () => {
    const data = textTo(org, newNumber());
    await sandbox.fault({ kind: 'timeout', hold_ms: 4000, match: { wa_id: data.to } });
    const { entry_id } = await d.enqueue.enqueue(data);
    const draining = d.drain.drain(10_000);
    await eventually(async () => (await sandbox.received(data.to)).length === 1);
    // Another writer (as the dispatcher when its wait ends) parks the send while the statement runs.
    const other = new pg.Client({ connectionString: world.databaseUrl });
    await other.connect();
    try {
      await other.query('BEGIN');
      const [{ pid }] = (await other.query<{ pid: number }>(`SELECT pg_backend_pid() AS pid`)).rows;
      await other.query(`UPDATE "${schema()}".message_outbox SET status = 'ambiguous', last_classification = 'ambiguous' WHERE id = $1 AND status = 'sending'`, [entry_id]);
      const wamid = `wamid.moved-${randomUUID()}`;
      let done = false;
      const recorded = record([status({ entryId: entry_id, wamid, to: data.to, key: data.idempotency_key, logContext: data.log_context! }, 'sent', 1751000650)]).finally(() => (done = true));
      await eventually(async () => done || (await world.sql(`SELECT 1 FROM pg_stat_activity WHERE $1 = ANY(pg_blocking_pids(pid))`, [pid])).length > 0);
      expect(done).toBe(false);
      await other.query('COMMIT');
      expect((await recorded).outcomes).toEqual([{ id: wamid, status: 'sent', outcome: 'resolved' }]);
      await draining;
      expect(await entry(entry_id)).toMatchObject({ status: 'accepted', provider_message_id: wamid, resolution: 'accepted', resolved_by: 'provider', evidence: null });
      expect(await statusRows([wamid])).toEqual([{ provider_message_id: wamid, status: 'sent', entry_id, resolution_outcome: 'resolved', correlation: entry_id, account_id: phoneNumberId }]);
      expect((await entryEvents(entry_id)).filter(([type]) => type === OutboxEvents.EntryResolved)).toEqual([[OutboxEvents.EntryResolved, 'accepted']]);
    } finally {
      await other.end();
    }
  });

  it('stores a status for an unknown message, a token naming no entry, or another number’s entry, and touches no entry', async () => {
    const [s] = await sendMany(1);
    const before = await entry(s.entryId);
    const unknown = `wamid.unknown-${randomUUID()}`;
    const noEntry = `wamid.no-entry-${randomUUID()}`;
    const notUuid = `wamid.not-uuid-${randomUUID()}`;
    const ours = await record([
      { id: unknown, status: 'delivered', timestamp: '1751000700' },
      { id: noEntry, status: 'sent', timestamp: '1751000700', biz_opaque_callback_data: randomUUID() },
      { id: notUuid, status: 'sent', timestamp: '1751000700', biz_opaque_callback_data: 'campaign-42' },
      status(s, 'deleted', 1751000700),
      { id: 'ignored: no status' } as unknown as WhatsAppStatus,
    ]);
    expect(ours.outcomes.map((o) => o.outcome)).toEqual(['no_correlation', 'not_found', 'not_found', 'invalid_resolution']);
    expect((await statusRows([unknown, noEntry, notUuid, s.wamid])).map((r) => [r.provider_message_id, r.entry_id, r.resolution_outcome])).toEqual(
      [
        [unknown, null, 'no_correlation'],
        [noEntry, null, 'not_found'],
        [notUuid, null, 'not_found'],
        // The token names the entry: the status is kept with it, though it proves nothing.
        [s.wamid, s.entryId, 'invalid_resolution'],
      ].sort((x, y) => String(x[0]).localeCompare(String(y[0]))),
    );
    expect((await statusEvents([unknown, noEntry, notUuid])).map((e) => [e.organization_id, e.payload.data.entry_id])).toEqual([
      [org, null],
      [org, null],
      [org, null],
    ]);

    // Another organization's number, naming our entry by its token and its provider id.
    const theirs = await record([status(s, 'read', 1751000800)], otherPhoneNumberId);
    expect(theirs.outcomes).toEqual([{ id: s.wamid, status: 'read', outcome: 'not_found' }]);
    const [read] = (await statusEvents([s.wamid])).filter((e) => e.payload.data.status === 'read');
    expect(read).toMatchObject({ organization_id: otherOrg, payload: { organization_id: otherOrg, data: { entry_id: null, idempotency_key: null, log_context: null } } });
    // A number nobody owns: stored (durable before the 200), told to nobody.
    const nobody = `wamid.nobody-${randomUUID()}`;
    expect((await record([{ id: nobody, status: 'sent', timestamp: '1751000900' }], '100000000000099')).outcomes).toEqual([{ id: nobody, status: 'sent', outcome: 'no_correlation' }]);
    expect(await statusRows([nobody])).toHaveLength(1);
    expect(await statusEvents([nobody])).toEqual([]);
    expect(await entry(s.entryId)).toEqual(before);
  });

  it('changes nothing when a batch is delivered again, or twice at once', async () => {
    const [plain] = await sendMany(1);
    const ambiguous = await ambiguousSend();
    const unknown = `wamid.unknown-${randomUUID()}`;
    const batch = [status(plain, 'delivered', 1751001000), status(ambiguous, 'sent', 1751001000), { id: unknown, status: 'read', timestamp: '1751001000' }];
    expect((await record(batch)).outcomes.map((o) => o.outcome)).toEqual(['not_ambiguous', 'resolved', 'no_correlation']);
    const snapshot = async () => ({
      rows: await world.sql(`SELECT * FROM "${schema()}".provider_statuses WHERE provider_message_id = ANY($1) ORDER BY id`, [[plain.wamid, ambiguous.wamid, unknown]]),
      events: await world.sql(`SELECT id, event_id, payload FROM "${schema()}".outbox_events WHERE payload->'data'->>'provider_message_id' = ANY($1) OR payload->'data'->>'entry_id' = ANY($2) ORDER BY id`, [
        [plain.wamid, ambiguous.wamid, unknown],
        [plain.entryId, ambiguous.entryId],
      ]),
      entries: [await entry(plain.entryId), await entry(ambiguous.entryId)],
    });
    const once = await snapshot();
    expect(once.rows).toHaveLength(3);
    d.clock.advance(60_000);
    const again = await record(batch);
    expect(again).toEqual({ stored: 0, outcomes: batch.map((s) => ({ id: s.id, status: s.status, outcome: 'duplicate' })) });
    expect(await snapshot()).toEqual(once);

    // Two deliveries of one new batch racing: each status is stored and told once.
    const [racing] = await sendMany(1);
    const twice = [status(racing, 'sent', 1751001100), status(racing, 'delivered', 1751001101)];
    const results = await Promise.all([record(twice), record(twice)]);
    expect(results.map((r) => r.stored).reduce((x, y) => x + y)).toBe(2);
    expect(results.flatMap((r) => r.outcomes.map((o) => o.outcome)).sort()).toEqual(['duplicate', 'duplicate', 'not_ambiguous', 'not_ambiguous']);
    expect(await statusRows([racing.wamid])).toHaveLength(2);
    expect(await statusEvents([racing.wamid])).toHaveLength(2);
  });
});
