import pg from 'pg';
import { randomUUID } from 'node:crypto';
import { OutboxAccountRpc } from '@touchpoint/contracts';
import { AppError } from '@touchpoint/errors';
import { RpcClient } from '@touchpoint/runtime';
import { aWhatsAppNumber, createTestWorld, eventually, type TestWorld } from '@touchpoint/testing';
import { RECIPIENT_BUSY_RETRY_MS } from '../../apps/outbox-dispatcher/src/drain/dispatch.service.js';
import { recipientLockKeys } from '../../apps/outbox-dispatcher/src/suppressions/recipient-lock.js';
import { ADD_LOCK_TIMEOUT_MS, IN_FLIGHT_WAIT_MS } from '../../apps/outbox-dispatcher/src/suppressions/suppressions.service.js';
import { type Dispatcher, SandboxHandle, startDispatcher, textTo } from './harness.js';

/**
 * A suppression and the sends already past the pre-wire gate (seed 003 §5 "stop means stop";
 * DESIGN §5.3): every stop is put in force with `outbox.suppressions.add` before it is
 * acknowledged, so that answer must mean that nothing more reaches the provider for the address.
 * A send whose attempt opened before the row existed is already on its way: the answer waits for
 * the provider's answer to it. A gate that meets an add in progress hands its entry back instead
 * of sending. Judged at the Meta sandbox: when each request arrived and when it was answered.
 */
describe('a suppression against the sends already on their way', () => {
  let world: TestWorld;
  let sandbox: SandboxHandle;
  let d: Dispatcher;
  let rpc: RpcClient;
  let org: string;
  let seq = 0;

  const schema = () => world.schema('outbox-dispatcher');
  const entry = async (id: string) => (await world.sql<{ status: string; last_classification: string | null }>(`SELECT status, last_classification FROM "${schema()}".message_outbox WHERE id = $1`, [id]))[0]!;
  const attempts = async (id: string) => world.sql<{ outcome: string }>(`SELECT outcome FROM "${schema()}".message_outbox_attempts WHERE entry_id = $1`, [id]);
  const newNumber = () => `55219${String(80000000 + ++seq * 7919).slice(-8)}`;
  /** The recipient lock's SQL, `mode` '' (exclusive, as an add takes it) or '_shared' (as a gate does). */
  const lockSql = (mode: '' | '_shared') => `SELECT pg_advisory_xact_lock${mode}(${recipientLockKeys('$1::text', '$2::text', '$3::text')})`;
  /** An add in progress on its own connection: it holds `to`'s lock and has not written its row yet; `commit` writes it. */
  const addInProgress = async (to: string) => {
    const client = new pg.Client({ connectionString: world.databaseUrl });
    await client.connect();
    await client.query('BEGIN');
    await client.query(lockSql(''), [org, 'whatsapp', to]);
    return {
      commit: async () => {
        await client.query(`INSERT INTO "${schema()}".contact_suppressions (organization_id, channel, value, reason, created_at) VALUES ($1, 'whatsapp', $2, 'opt_out', now())`, [org, to]);
        await client.query('COMMIT');
      },
      end: () => client.end(),
    };
  };
  /** Nothing reached the sandbox for `to` and no attempt opened: the entry is `status` (handed back `pending`, or refused once the row committed). */
  const expectNotSent = async (to: string, entryId: string, expected: Record<string, unknown>) => {
    expect(await sandbox.received(to)).toEqual([]);
    expect(await attempts(entryId)).toEqual([]);
    expect(await entry(entryId)).toMatchObject(expected);
  };
  const suppress = (to: string) => rpc.call('outbox-dispatcher', OutboxAccountRpc.SuppressionAdd, { organization_id: org, channel: 'whatsapp', value: to, reason: 'opt_out' }, 5000);

  beforeAll(async () => {
    world = await createTestWorld('outbox_supp_inflight');
    sandbox = await SandboxHandle.start();
    // The provider's held answers below stay inside the send timeout: the sends end accepted, not ambiguous.
    d = await startDispatcher(world, sandbox, { WHATSAPP_SEND_TIMEOUT_MS: '5000' });
    rpc = d.app.get(RpcClient);
    org = `org-${randomUUID()}`;
    await aWhatsAppNumber(d, org, '100000000000031');
  });
  afterAll(async () => {
    await world.close();
    await sandbox.close();
  });
  beforeEach(() => sandbox.reset());

  it('answers the add only after the provider answered the send that was already on the wire to the address', async () => {
    const to = newNumber();
    await sandbox.fault({ kind: 'latency', latency_ms: 600, match: { wa_id: to } });
    const queued = await d.enqueue.enqueue(textTo(org, to));
    const draining = d.drain.drain(5000);
    // The attempt is open: the request is with the provider, which holds its answer.
    await eventually(async () => (await attempts(queued.entry_id)).some((a) => a.outcome === 'open'));
    const added = await suppress(to);
    const answeredAt = Date.now();
    await draining;

    const calls = await sandbox.received(to);
    expect(calls).toHaveLength(1);
    expect(calls[0]!.outcome).toBe('accepted');
    expect(calls[0]!.arrived_at).toBeLessThan(answeredAt);
    expect(calls[0]!.at).toBeLessThanOrEqual(answeredAt);
    expect(added).toMatchObject({ channel: 'whatsapp', value: to, created: true, cancelled_entry_ids: [], in_flight: 0 });
    expect(await entry(queued.entry_id)).toMatchObject({ status: 'accepted' });

    // Later sends to it never leave.
    const later = await d.enqueue.enqueue(textTo(org, to));
    d.clock.advance(10_000);
    await d.drain.drain(5000);
    expect(await sandbox.received(to)).toHaveLength(1);
    expect(await entry(later.entry_id)).toMatchObject({ status: 'failed', last_classification: 'suppressed' });
  });

  it('waits at most IN_FLIGHT_WAIT_MS for a slow provider, then answers with the send still out counted', async () => {
    const to = newNumber();
    await sandbox.fault({ kind: 'latency', latency_ms: IN_FLIGHT_WAIT_MS + 1500, match: { wa_id: to } });
    const queued = await d.enqueue.enqueue(textTo(org, to));
    const draining = d.drain.drain(8000);
    await eventually(async () => (await attempts(queued.entry_id)).some((a) => a.outcome === 'open'));
    const askedAt = Date.now();
    const added = await suppress(to);
    const answeredAt = Date.now();
    expect(added).toMatchObject({ created: true, in_flight: 1 });
    expect(answeredAt - askedAt).toBeGreaterThanOrEqual(IN_FLIGHT_WAIT_MS - 50);
    expect(answeredAt - askedAt).toBeLessThan(IN_FLIGHT_WAIT_MS + 1000);
    await draining;
    // The request had reached the provider before the add took hold; nothing else went.
    const calls = await sandbox.received(to);
    expect(calls).toHaveLength(1);
    expect(calls[0]!.arrived_at).toBeLessThan(askedAt);
  });

  it("waits for a gate that holds the address's lock (its attempt is then counted), and fails past its lock timeout, writing nothing", async () => {
    const gate = new pg.Client({ connectionString: world.databaseUrl });
    await gate.connect();
    const holdShared = async (to: string) => {
      await gate.query('BEGIN');
      await gate.query(lockSql('_shared'), [org, 'whatsapp', to]);
    };
    try {
      const to = newNumber();
      await holdShared(to);
      let answered = false;
      const adding = suppress(to).then((r) => ((answered = true), r));
      await new Promise((r) => setTimeout(r, ADD_LOCK_TIMEOUT_MS / 2));
      expect(answered).toBe(false);
      await gate.query('COMMIT');
      expect(await adding).toMatchObject({ created: true, in_flight: 0 });

      const other = newNumber();
      await holdShared(other);
      await expect(suppress(other)).rejects.toBeInstanceOf(AppError);
      await gate.query('COMMIT');
      expect(await world.sql(`SELECT 1 FROM "${schema()}".contact_suppressions WHERE organization_id = $1 AND value = $2`, [org, other])).toEqual([]);
    } finally {
      await gate.end();
    }
  });

  it('hands a send back untouched while its address is being suppressed, and refuses it once the suppression commits', async () => {
    const to = newNumber();
    const queued = await d.enqueue.enqueue(textTo(org, to));
    const add = await addInProgress(to);
    try {
      await d.drain.drain(3000);
      await expectNotSent(to, queued.entry_id, { status: 'pending' });
      await add.commit();
    } finally {
      await add.end();
    }
    d.clock.advance(RECIPIENT_BUSY_RETRY_MS);
    await d.drain.drain(3000);
    await expectNotSent(to, queued.entry_id, { status: 'failed', last_classification: 'suppressed' });
  });

  it('hands back a media send whose upload ran while its address started being suppressed (the two-phase path)', async () => {
    const to = newNumber();
    // The upload is prepared outside the claim's transaction: the add begins while it is held.
    await sandbox.fault({ kind: 'latency', latency_ms: 500, match: { type: 'media' } });
    const queued = await d.enqueue.enqueue({ ...textTo(org, to), payload: { type: 'media', media_type: 'document', upload: { data_base64: Buffer.from('%PDF-1.4 fake').toString('base64'), mime_type: 'application/pdf', filename: 'invoice.pdf' }, caption: 'Invoice' } });
    const draining = d.drain.drain(3000);
    await eventually(async () => (await entry(queued.entry_id)).status === 'sending');
    const add = await addInProgress(to);
    try {
      await draining;
      await expectNotSent(to, queued.entry_id, { status: 'pending' });
      await add.commit();
    } finally {
      await add.end();
    }
    d.clock.advance(RECIPIENT_BUSY_RETRY_MS);
    await d.drain.drain(3000);
    await expectNotSent(to, queued.entry_id, { status: 'failed', last_classification: 'suppressed' });
  });
});
