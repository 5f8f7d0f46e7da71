import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { type Queryable } from '@touchpoint/database';

import { aWhatsAppNumber, createTestWorld, eventually, explainPlan, TEST_DATABASE_URL, type TestWorld } from '@touchpoint/testing';
import { MessagesRepository } from '../../apps/messaging/src/messages/messages.repository.js';
import { MessagingConfig } from '../../apps/messaging/src/messaging.config.js';
import { MessagingModule } from '../../apps/messaging/src/messaging.module.js';
import { InboundBatchRepository } from '../../apps/messaging/src/inbound/inbound-batch.repository.js';
import { SendRepository } from '../../apps/messaging/src/sending/send.repository.js';
import { SendService } from '../../apps/messaging/src/sending/send.service.js';
import { AmbiguousRepository, type StatusRow } from '../../apps/outbox-dispatcher/src/ambiguous/ambiguous.repository.js';
import { type Dispatcher, SandboxHandle, startDispatcher, textTo } from '../outbox/harness.js';

/** Rows each table under test holds: about what the pipeline benchmark leaves, enough for a scan to cost. */
const ROWS = 4_000;

/**
 * The hot statements of a send's status path stay on their indexes, judged from PostgreSQL's own
 * plan (EXPLAIN, not run) on tables of a few thousand analysed rows. Each statement is the
 * repository's own text: the repository runs against a Queryable that explains instead of
 * executing. Two plans these guard against, both seen in `bench:pipeline`'s scan counts:
 * - messaging's lock of a status batch's messages, written as `by provider id OR by id`, read and
 *   sorted the whole messages table for every batch, at any size (an OR over a subquery cannot use
 *   an index);
 * - the dispatcher's status statement reads its batch from a JSON recordset, which the planner
 *   takes for 100 rows: it hash-joined the whole outbox and the whole status table for one status.
 * Also the statements of a consumer batch of sends (messaging `SendService.prepareBatch`), which
 * join their tables to arrays of the batch's keys. A statement marked for a generic plan
 * (`genericPlan`) is judged by the generic plan it runs on (`explainPlan`).
 */
describe('hot statements of the status path use their indexes', () => {
  let world: TestWorld;
  let sandbox: SandboxHandle;
  let d: Dispatcher;
  let messaging: NestFastifyApplication;
  const org = `org-${randomUUID()}`;
  const phoneNumberId = '100000000000071';

  /** A Queryable that answers the plan of each statement, in `schema`, instead of running it. */
  async function explaining(schema: string): Promise<{ db: Queryable; plans: string[]; close: () => Promise<void> }> {
    const client = new pg.Client({ connectionString: TEST_DATABASE_URL });
    await client.connect();
    await client.query(`SET search_path TO "${schema}", public`);
    const plans: string[] = [];
    const db: Queryable = {
      query: async <T>(sql: string, params?: unknown[]): Promise<T[]> => {
        plans.push(await explainPlan(client, sql, params));
        return [] as T[];
      },
    };
    return { db, plans, close: () => client.end() };
  }

  /**
   * Copies the row `id` of `table` `n` times: `overrides` give each copy's value of a column as SQL
   * over `g` (1..n); columns with a default of their own (serials) take it.
   */
  async function cloneRow(schema: string, table: string, id: string, n: number, overrides: Record<string, string>): Promise<void> {
    const columns = await world.sql<{ column_name: string; serial: boolean }>(`SELECT column_name, (column_default LIKE 'nextval(%') AS serial FROM information_schema.columns WHERE table_schema = $1 AND table_name = $2 AND is_generated = 'NEVER' ORDER BY ordinal_position`, [
      schema,
      table,
    ]);
    const copied = columns.filter((c) => !c.serial || overrides[c.column_name]).map((c) => c.column_name);
    const values = copied.map((c) => overrides[c] ?? `t."${c}"`);
    await world.sql(`INSERT INTO "${schema}"."${table}" (${copied.map((c) => `"${c}"`).join(', ')}) SELECT ${values.join(', ')} FROM "${schema}"."${table}" t, generate_series(1, ${n}) g WHERE t.id = $1`, [id]);
    await world.sql(`ANALYZE "${schema}"."${table}"`);
  }

  const seqScans = (plan: string) => [...plan.matchAll(/Seq Scan on (\w+)/g)].map((m) => m[1]);

  beforeAll(async () => {
    world = await createTestWorld('hot_plans');
    sandbox = await SandboxHandle.start();
    d = await startDispatcher(world, sandbox);
    messaging = await world.start(MessagingModule.forRoot(world.config(MessagingConfig, { INSTANCE_SWEEP_INTERVAL_MS: '0', SUMMARIES: 'off' })));
    await aWhatsAppNumber(d, org, phoneNumberId);
  }, 120_000);
  afterAll(async () => {
    await world?.close();
    await sandbox?.close();
  });

  it("locks a status batch's messages by provider id and by id through their indexes, with thousands of messages stored", async () => {
    const m = world.schema('messaging');
    const sent = await messaging.get(SendService).send({ organization_id: org, idempotency_key: `plans:${randomUUID()}`, channel: 'whatsapp', to: '+5511987650071', sender_type: 'followup', requester: 'followups', text: 'template' });
    await cloneRow(m, 'messages', sent.message_id, ROWS, { id: 'gen_random_uuid()', external_id: `'wamid.plans.' || g`, idempotency_key: `'plans:' || g` });
    const [{ n }] = await world.sql<{ n: number }>(`SELECT count(*)::int AS n FROM "${m}".messages`);
    expect(n).toBeGreaterThan(ROWS);

    const x = await explaining(m);
    try {
      await new MessagesRepository().lockForStatuses(
        x.db as Parameters<MessagesRepository['lockForStatuses']>[0],
        [
          { organization_id: org, channel: 'whatsapp', external_id: 'wamid.plans.7' },
          { organization_id: org, channel: 'whatsapp', external_id: 'wamid.plans.8' },
        ],
        [sent.message_id],
      );
      expect(x.plans).toHaveLength(1);
      expect(seqScans(x.plans[0]!)).toEqual([]);
      expect(x.plans[0]).toContain('messages_external_uidx');
      expect(x.plans[0]).toContain('messages_pkey');
    } finally {
      await x.close();
    }
  });

  it('reads, locks and writes a consumer batch of sends through the indexes of its keys, contacts and conversations, with thousands of each stored', async () => {
    const m = world.schema('messaging');
    const sent = await messaging.get(SendService).send({ organization_id: org, idempotency_key: `plans:${randomUUID()}`, channel: 'whatsapp', to: '+5511987650073', sender_type: 'followup', requester: 'followups', text: 'hello' });
    await cloneRow(m, 'messages', sent.message_id, ROWS, { id: 'gen_random_uuid()', idempotency_key: `'batch:' || g` });
    await cloneRow(m, 'contacts', sent.contact_id, ROWS, { id: 'gen_random_uuid()', phone: `'+55119' || (10000000 + g)`, phone_key: `'55119' || (10000000 + g)` });
    await cloneRow(m, 'conversations', sent.conversation_id, ROWS, { id: 'gen_random_uuid()', contact_id: `(SELECT id FROM "${m}".contacts WHERE phone_key = '55119' || (10000000 + g))` });

    const x = await explaining(m);
    try {
      const repository = new SendRepository();
      const tx = x.db as Parameters<SendRepository['startBatch']>[0];
      await repository.startBatch(tx, [
        { organizationId: org, key: 'batch:7', contactId: sent.contact_id },
        { organizationId: org, key: `plans:${randomUUID()}`, contactId: randomUUID() },
      ]);
      const message = {
        organization_id: org,
        conversation_id: sent.conversation_id,
        instance_id: sent.instance_id,
        contact_id: sent.contact_id,
        channel: 'whatsapp',
        direction: 'outbound',
        sender_type: 'followup',
        message_type: 'text',
        body: 'hi',
        status: 'queued',
        created_at: new Date(),
      } as const;
      // The conversations' statements the batch shares with the inbound one.
      const conversations = new InboundBatchRepository();
      await conversations.ensureConversations(
        tx,
        [
          { organization_id: org, contact_id: sent.contact_id },
          { organization_id: org, contact_id: randomUUID() },
        ],
        'whatsapp',
        new Date(),
      );
      await conversations.lockConversations(tx, [sent.conversation_id, randomUUID()]);
      await repository.insertBatch(tx, [
        { ...message, idempotency_key: `plans:${randomUUID()}` },
        { ...message, idempotency_key: `plans:${randomUUID()}` },
      ]);
      expect(x.plans).toHaveLength(4);
      for (const plan of x.plans) expect(seqScans(plan)).toEqual([]);
      expect(x.plans[0]).toContain('messages_idempotency_uidx');
      expect(x.plans[0]).toContain('contacts_pkey');
      expect(x.plans[1]).toContain('conversations_contact_channel_key');
      expect(x.plans[2]).toContain('conversations_pkey');
      expect(x.plans[3]).toContain('conversations_pkey');
    } finally {
      await x.close();
    }
  });

  it('records a status webhook without reading the whole outbox or status table, with thousands of both stored', async () => {
    const o = world.schema('outbox-dispatcher');
    const { entry_id } = await d.enqueue.enqueue(textTo(org, '5511987650072'));
    await eventually(async () => {
      await d.drain.drain(5000);
      return (await world.sql<{ status: string }>(`SELECT status FROM "${o}".message_outbox WHERE id = $1`, [entry_id]))[0]?.status === 'accepted';
    });
    await cloneRow(o, 'message_outbox', entry_id, ROWS, { id: 'gen_random_uuid()', idempotency_key: `'plans:' || g`, provider_message_id: `'wamid.plans.' || g` });
    await world.sql(
      `INSERT INTO "${o}".provider_statuses (channel, account_id, provider_message_id, status, provider_timestamp, recipient, correlation, body, received_at)
       SELECT 'whatsapp', $1, 'wamid.plans.' || g, s, now(), '5511987650072', NULL, '{}'::jsonb, now() FROM generate_series(1, $2::int) g, unnest(ARRAY['sent', 'delivered']) s`,
      [phoneNumberId, ROWS],
    );
    await world.sql(`ANALYZE "${o}".provider_statuses`);

    const x = await explaining(o);
    try {
      const status: StatusRow = { ord: 0, id: 'wamid.plans.9', status: 'read', provider_timestamp: new Date().toISOString(), recipient: '5511987650072', correlation: entry_id, token: entry_id, verdict: 'accept', body: {}, event_id: `plans:${randomUUID()}`, payload: '{}' };
      await new AmbiguousRepository().recordStatuses(x.db, phoneNumberId, [status], new Date());
      expect(x.plans).toHaveLength(1);
      expect(seqScans(x.plans[0]!)).toEqual([]);
    } finally {
      await x.close();
    }
  });
});
