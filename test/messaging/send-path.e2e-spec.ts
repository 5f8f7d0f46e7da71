import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import { jest } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import { type BusMessage, MessagingCommands, MessagingEvents, type MessagingSendData, type OutboxEntryEventData, OutboxEvents } from '@touchpoint/contracts';
import type { Tx } from '@touchpoint/database';
import { Metrics } from '@touchpoint/observability';
import { UnitOfWork } from '@touchpoint/runtime';
import { createTestWorld, eventually, type TestWorld } from '@touchpoint/testing';
import { ContactsService } from '../../apps/messaging/src/contacts/contacts.service.js';
import { MessagingConfig } from '../../apps/messaging/src/messaging.config.js';
import { MessagingModule } from '../../apps/messaging/src/messaging.module.js';
import { OutcomesConsumer } from '../../apps/messaging/src/sending/outcomes.consumer.js';
import { OutcomesService } from '../../apps/messaging/src/sending/outcomes.service.js';
import { SendConsumer } from '../../apps/messaging/src/sending/send.controller.js';
import { SendService } from '../../apps/messaging/src/sending/send.service.js';

/**
 * The shared send path and the acceptance path in few statements (seed 004 "Enqueue before
 * wire", DESIGN §5 rules 1, 2 and 6): the rows and events of a send, the idempotency key, one
 * conversation per contact and channel under concurrent first sends, a consumer batch of
 * `messaging.send` commands, and a consumer batch of entry outcomes; each counts its statements
 * through a transaction that records them.
 */
describe('send path', () => {
  let world: TestWorld;
  let app: NestFastifyApplication;
  let sends: SendService;
  let uow: UnitOfWork;
  const org = `org-${randomUUID()}`;
  const m = (table: string) => `"${world.schema('messaging')}".${table}`;
  let phoneSeq = 0;

  beforeAll(async () => {
    world = await createTestWorld('send_path');
    app = await world.start(MessagingModule.forRoot(world.config(MessagingConfig, { INSTANCE_SWEEP_INTERVAL_MS: '0', SUMMARIES: 'off', OUTCOME_SWEEP_INTERVAL_MS: '0' })));
    sends = app.get(SendService);
    uow = app.get(UnitOfWork);
  });
  afterAll(() => world.close());

  /**
   * Runs `work` in one transaction whose statements are recorded (an outbox insert as `publish`),
   * those run right before the commit included; BEGIN and COMMIT are not counted. `work` sees them as they are recorded.
   */
  async function counted<T>(work: (tx: Tx, statements: readonly string[]) => Promise<T>): Promise<{ result: T; statements: string[] }> {
    const statements: string[] = [];
    const result = await uow.run((tx) => {
      // The transaction's own methods, its statements and publishes recorded on the way.
      const recording: Tx = {
        ...tx,
        query: (sql, params) => {
          statements.push(sql.replace(/\s+/g, ' ').trim());
          return tx.query(sql, params);
        },
        publish: (messages) => {
          statements.push('publish');
          return tx.publish(messages);
        },
        // A statement answered at commit runs in the commit's round trip, not through `query`.
        atCommit: (callback) =>
          tx.atCommit(async () => {
            const statement = await callback();
            if (statement) statements.push(statement.sql.replace(/\s+/g, ' ').trim());
            return statement;
          }),
      };
      return work(recording, statements);
    });
    return { result, statements };
  }

  async function contact(): Promise<{ id: string; phone: string }> {
    const phone = `+55119876${String(++phoneSeq).padStart(5, '0')}`;
    const created = await app.get(ContactsService).create({ organization_id: org, phone, name: 'Ana' } as never);
    return { id: created.id, phone };
  }

  const followup = (contactId: string, over: Partial<MessagingSendData> = {}): MessagingSendData => ({
    organization_id: org,
    idempotency_key: `followup:${randomUUID()}`,
    channel: 'whatsapp',
    contact_id: contactId,
    sender_type: 'followup',
    sender_id: 'flow-1',
    requester: 'followups',
    text: 'hello there',
    context: { enrollment_id: 'e-1', step: 2 },
    stop_on_reply: true,
    ...over,
  });

  const outboxOf = (messageId: string) =>
    world.sql<{ event_id: string; type: string; organization_id: string; payload: { data: Record<string, unknown> } }>(
      `SELECT event_id, type, organization_id, payload FROM ${m('outbox_events')} WHERE payload->'data'->'log_context'->>'message_id' = $1 OR payload->'data'->>'message_id' = $1 ORDER BY id`,
      [messageId],
    );
  const feedOf = (conversationId: string) => world.sql<{ type: string; data: Record<string, unknown> }>(`SELECT type, data FROM ${m('stream_events')} WHERE organization_id = $1 AND data->>'conversation_id' = $2 ORDER BY id`, [org, conversationId]);
  const rowCounts = async () => {
    const [row] = await world.sql<{ messages: number; conversations: number; instances: number; outbox: number; feed: number }>(
      `SELECT (SELECT count(*)::int FROM ${m('messages')}) AS messages, (SELECT count(*)::int FROM ${m('conversations')}) AS conversations,
              (SELECT count(*)::int FROM ${m('conversation_instances')}) AS instances, (SELECT count(*)::int FROM ${m('outbox_events')}) AS outbox,
              (SELECT count(*)::int FROM ${m('stream_events')}) AS feed`,
    );
    return row;
  };

  describe('sendInTx', () => {
    it('writes a first send to a contact in four statements: the message, its new conversation and instance, the enqueue command and the feed items', async () => {
      const c = await contact();
      const data = followup(c.id);
      const { result, statements } = await counted((tx) => sends.sendInTx(tx, data));
      // Before: key read, contact read, conversation lock, conversation insert, instance insert, conversation touch, message insert, outbox insert.
      expect(statements.filter((s) => !s.includes('INSERT INTO stream_events'))).toHaveLength(4);
      expect(statements).toHaveLength(5); // and the feed items, one insert at the commit
      expect(result.created).toBe(true);

      const [message] = await world.sql(`SELECT * FROM ${m('messages')} WHERE id = $1`, [result.message.id]);
      const [conversation] = await world.sql(`SELECT * FROM ${m('conversations')} WHERE contact_id = $1`, [c.id]);
      const instances = await world.sql(`SELECT * FROM ${m('conversation_instances')} WHERE conversation_id = $1`, [conversation.id]);
      const at = message.created_at as Date;
      expect(message).toMatchObject({
        organization_id: org,
        conversation_id: conversation.id,
        instance_id: instances[0].id,
        contact_id: c.id,
        channel: 'whatsapp',
        direction: 'outbound',
        sender_type: 'followup',
        sender_id: 'flow-1',
        message_type: 'text',
        body: 'hello there',
        subject: null,
        status: 'queued',
        external_id: null,
        in_reply_to: null,
        payload: { type: 'text', body: 'hello there' },
        idempotency_key: data.idempotency_key,
        requester: 'followups',
        context: { enrollment_id: 'e-1', step: 2 },
        notification_id: null,
        notification_delivery_id: null,
        auto_reply: false,
        opt_out: false,
        error_code: null,
        sent_at: null,
        failed_at: null,
      });
      expect(conversation).toMatchObject({ organization_id: org, channel: 'whatsapp', status: 'open', last_message_at: at, activity_at: at, created_at: at, updated_at: at, resolved_at: null });
      expect(instances).toEqual([expect.objectContaining({ organization_id: org, instance_number: 1, status: 'active', message_count: 1, started_at: at, last_message_at: at, closed_at: null })]);
      expect(await outboxOf(result.message.id)).toEqual([
        {
          event_id: `messaging.send:${result.message.id}`,
          type: 'outbox.enqueue',
          organization_id: org,
          payload: expect.objectContaining({
            data: {
              organization_id: org,
              channel: 'whatsapp',
              sender_id: null,
              to: c.phone,
              idempotency_key: data.idempotency_key,
              payload: { type: 'text', body: 'hello there' },
              log_context: { message_id: result.message.id, conversation_id: conversation.id, contact_id: c.id, requester: 'followups', enrollment_id: 'e-1', step: 2 },
              requester: 'messaging',
              stop_on_reply: true,
            },
          }),
        },
      ]);
      const feed = await feedOf(conversation.id as string);
      expect(feed.map((f) => f.type)).toEqual(['messaging.instance.opened', 'messaging.message.queued']);
      expect(feed[0].data).toMatchObject({ instance_id: instances[0].id, status: 'active', message_count: 0, previous_instance_id: null });
      expect(feed[1].data).toMatchObject({ id: result.message.id, status: 'queued', instance_id: instances[0].id });
    });

    it('adds a later send to the same conversation and instance in four statements, touching the conversation', async () => {
      const c = await contact();
      const first = await sends.send(followup(c.id));
      const { result, statements } = await counted((tx) => sends.sendInTx(tx, followup(c.id, { text: 'second' })));
      expect(statements).toHaveLength(5);
      expect(result.message).toMatchObject({ conversation_id: first.conversation_id, instance_id: first.instance_id });
      const [conversation] = await world.sql(`SELECT last_message_at, activity_at, updated_at FROM ${m('conversations')} WHERE id = $1`, [first.conversation_id]);
      expect(conversation).toEqual({ last_message_at: result.message.created_at, activity_at: result.message.created_at, updated_at: result.message.created_at });
      const [instance] = await world.sql(`SELECT message_count, last_message_at FROM ${m('conversation_instances')} WHERE id = $1`, [first.instance_id]);
      expect(instance).toEqual({ message_count: 2, last_message_at: result.message.created_at });
      expect((await feedOf(first.conversation_id)).map((f) => f.type)).toEqual(['messaging.instance.opened', 'messaging.message.queued', 'messaging.message.queued']);
    });

    it('opens the next instance when the idle sweep closed the last one', async () => {
      const c = await contact();
      const first = await sends.send(followup(c.id));
      await world.sql(`UPDATE ${m('conversation_instances')} SET status = 'closed', closed_at = now(), auto_closed_reason = 'time_limit' WHERE id = $1`, [first.instance_id]);
      const second = await sends.send(followup(c.id));
      expect(second.instance_id).not.toBe(first.instance_id);
      const instances = await world.sql(`SELECT id, instance_number, status, message_count FROM ${m('conversation_instances')} WHERE conversation_id = $1 ORDER BY instance_number`, [first.conversation_id]);
      expect(instances).toEqual([
        { id: first.instance_id, instance_number: 1, status: 'closed', message_count: 1 },
        { id: second.instance_id, instance_number: 2, status: 'active', message_count: 1 },
      ]);
    });

    it('answers a repeated key with the first message in one statement and writes nothing', async () => {
      const c = await contact();
      const data = followup(c.id);
      const first = await sends.send(data);
      const before = await rowCounts();
      const { result, statements } = await counted((tx) => sends.sendInTx(tx, { ...data, text: 'another text' }));
      expect(statements).toHaveLength(1);
      expect(result).toMatchObject({ created: false, message: { id: first.message_id, body: 'hello there', status: 'queued' } });
      expect(await sends.send(data)).toEqual({ ...first, created: false });
      expect(await rowCounts()).toEqual(before);
    });

    it('makes one conversation and one instance of concurrent first sends to a new contact', async () => {
      const c = await contact();
      const answers = await Promise.all([1, 2, 3, 4].map((i) => sends.send(followup(c.id, { text: `at once ${i}` }))));
      expect(new Set(answers.map((a) => a.conversation_id)).size).toBe(1);
      expect(new Set(answers.map((a) => a.instance_id)).size).toBe(1);
      expect(await world.sql(`SELECT count(*)::int AS n FROM ${m('conversations')} WHERE contact_id = $1`, [c.id])).toEqual([{ n: 1 }]);
      expect(await world.sql(`SELECT status, message_count FROM ${m('conversation_instances')} WHERE conversation_id = $1`, [answers[0].conversation_id])).toEqual([{ status: 'active', message_count: 4 }]);
      expect((await feedOf(answers[0].conversation_id)).filter((f) => f.type === 'messaging.instance.opened')).toHaveLength(1);
    });

    it('makes one message and one enqueue command of concurrent sends with the same key', async () => {
      const c = await contact();
      const data = followup(c.id);
      const answers = await Promise.all([1, 2, 3, 4].map(() => sends.send(data)));
      expect(new Set(answers.map((a) => a.message_id)).size).toBe(1);
      expect(answers.filter((a) => a.created)).toHaveLength(1);
      expect(await world.sql(`SELECT count(*)::int AS n FROM ${m('messages')} WHERE idempotency_key = $1`, [data.idempotency_key])).toEqual([{ n: 1 }]);
      expect((await outboxOf(answers[0].message_id)).map((e) => e.type)).toEqual(['outbox.enqueue']);
      expect(await world.sql(`SELECT message_count FROM ${m('conversation_instances')} WHERE id = $1`, [answers[0].instance_id])).toEqual([{ message_count: 1 }]);
    });

    it("writes an operator's send into a named conversation with its two events in one insert", async () => {
      const c = await contact();
      const first = await sends.send(followup(c.id));
      const data = followup(c.id, { conversation_id: first.conversation_id, sender_type: 'operator', sender_id: 'member-7', requester: 'operator', context: undefined, stop_on_reply: true });
      const { result, statements } = await counted((tx) => sends.sendInTx(tx, data));
      expect(statements.filter((s) => s === 'publish')).toHaveLength(1);
      expect(statements).toHaveLength(5);
      expect((await outboxOf(result.message.id)).map((e) => [e.event_id, e.type])).toEqual([
        [`messaging.send:${result.message.id}`, 'outbox.enqueue'],
        [`messaging.human_message_sent:${result.message.id}`, 'messaging.human_message_sent'],
      ]);
      // An operator's send is never held after a reply.
      expect((await outboxOf(result.message.id))[0].payload.data).not.toHaveProperty('stop_on_reply');
    });

    it('refuses a conversation of another contact and writes nothing', async () => {
      const [a, b] = [await contact(), await contact()];
      const ofA = await sends.send(followup(a.id));
      const before = await rowCounts();
      await expect(sends.send(followup(b.id, { conversation_id: ofA.conversation_id }))).rejects.toMatchObject({ code: 'not_found' });
      await expect(sends.send(followup(b.id, { conversation_id: 'not-a-uuid' }))).rejects.toMatchObject({ code: 'not_found' });
      await expect(sends.send(followup(randomUUID()))).rejects.toMatchObject({ code: 'not_found' });
      expect(await rowCounts()).toEqual(before);
      const [conversation] = await world.sql(`SELECT updated_at FROM ${m('conversations')} WHERE id = $1`, [ofA.conversation_id]);
      expect(conversation.updated_at).toEqual((await world.sql(`SELECT created_at FROM ${m('messages')} WHERE id = $1`, [ofA.message_id]))[0].created_at);
    });

    it('fails the send of an opted-out contact at the enqueue stage, queuing nothing', async () => {
      const c = await contact();
      await world.sql(`UPDATE ${m('contacts')} SET opted_out_at = now() WHERE id = $1`, [c.id]);
      const answer = await sends.send(followup(c.id));
      expect(answer).toMatchObject({ status: 'failed', created: true });
      expect(await world.sql(`SELECT status, error_code, failed_at IS NOT NULL AS failed FROM ${m('messages')} WHERE id = $1`, [answer.message_id])).toEqual([{ status: 'failed', error_code: 'opted_out', failed: true }]);
      expect((await outboxOf(answer.message_id)).map((e) => [e.type, e.payload.data.failure_stage, e.payload.data.error_code])).toEqual([['messaging.message.failed', 'enqueue', 'opted_out']]);
    });

    it('counts the idempotency key in code points: an emoji is one character, not two UTF-16 units', async () => {
      const c = await contact();
      const emoji = '\u{1F600}';
      // 103 code points, 203 UTF-16 units.
      const taken = await sends.send(followup(c.id, { idempotency_key: `${emoji.repeat(100)}-x9` }));
      expect(taken).toMatchObject({ created: true, status: 'queued' });
      expect(await world.sql(`SELECT idempotency_key FROM ${m('messages')} WHERE id = $1`, [taken.message_id])).toEqual([{ idempotency_key: `${emoji.repeat(100)}-x9` }]);
      expect(await sends.send(followup(c.id, { idempotency_key: emoji.repeat(200) }))).toMatchObject({ created: true });
      await expect(sends.send(followup(c.id, { idempotency_key: emoji.repeat(201) }))).rejects.toMatchObject({
        code: 'validation_failed',
        message: 'idempotency_key must be at most 200 characters',
        details: { field: 'idempotency_key', max: 200 },
      });
    });

    it('finds or creates the contact of an address', async () => {
      const phone = `+55119877${String(++phoneSeq).padStart(5, '0')}`;
      const answer = await sends.send({ ...followup(''), contact_id: undefined, to: phone });
      const [row] = await world.sql(`SELECT phone FROM ${m('contacts')} WHERE id = $1`, [answer.contact_id]);
      expect(row).toEqual({ phone });
      expect((await outboxOf(answer.message_id))[0].payload.data).toMatchObject({ to: phone });
    });
  });
  describe('consumer batch of sends', () => {
    const consumer = () => app.get(SendConsumer);
    const command = (data: MessagingSendData): BusMessage<MessagingSendData> => ({ event_id: `cmd:${randomUUID()}`, type: MessagingCommands.Send, organization_id: data.organization_id, occurred_at: new Date().toISOString(), data });
    /** What the bus does with a batch (`BusConnection.runBatch`): the preparer, then each message's handler, in one transaction. */
    const runBatch = (messages: BusMessage<MessagingSendData>[], tx: Tx) =>
      (async () => {
        await consumer().prepareSends(messages, tx);
        for (const message of messages) await consumer().onSend(message, tx);
      })();
    /** A statement by its first words (enough to tell them apart here). */
    const head = (statement: string) => statement.split(' ').slice(0, 4).join(' ');

    /**
     * Contacts and earlier sends of a new organization, and ten commands for it: two first sends to
     * a contact without a conversation, one to a contact with one, a copy of the first (another
     * event, the same key), a key stored before, an opted-out contact, a new phone by address, an
     * operator's send into a named conversation, a send on a channel with no sender (sms), and a
     * command that fails validation. The keys are the same in every organization.
     */
    async function scenario(organizationId: string): Promise<BusMessage<MessagingSendData>[]> {
      const person = async (name: string, phone: string) => (await app.get(ContactsService).create({ organization_id: organizationId, phone, name } as never)).id;
      const [existing, fresh, optedOut, member] = [await person('existing', '+5511988800001'), await person('fresh', '+5511988800002'), await person('opted out', '+5511988800003'), await person('member', '+5511988800004')];
      await world.sql(`UPDATE ${m('contacts')} SET opted_out_at = now() WHERE id = $1`, [optedOut]);
      const send = (over: Partial<MessagingSendData>): MessagingSendData => ({ ...followup('', over), organization_id: organizationId });
      await sends.send(send({ idempotency_key: 'k:stored', contact_id: existing, text: 'sent before' }));
      const ofMember = await sends.send(send({ idempotency_key: 'k:member-before', contact_id: member }));
      const first = command(send({ idempotency_key: 'k:fresh-1', contact_id: fresh, text: 'first to a new conversation' }));
      return [
        first,
        command(send({ idempotency_key: 'k:existing', contact_id: existing })),
        command(send({ idempotency_key: 'k:invalid', contact_id: existing, text: undefined })),
        command(send({ idempotency_key: 'k:fresh-2', contact_id: fresh, text: 'second to it' })),
        { ...first, event_id: `cmd:${randomUUID()}` },
        command(send({ idempotency_key: 'k:stored', contact_id: existing, text: 'another text' })),
        command(send({ idempotency_key: 'k:opted-out', contact_id: optedOut })),
        command(send({ idempotency_key: 'k:address', contact_id: undefined, to: '+5511988800009' })),
        command(send({ idempotency_key: 'k:operator', contact_id: member, conversation_id: ofMember.conversation_id, sender_type: 'operator', sender_id: 'member-7', requester: 'operator' })),
        command(send({ idempotency_key: 'k:unsupported', contact_id: fresh, channel: 'sms' })),
      ];
    }

    /**
     * Every row and event an organization's sends left, in a form two organizations can be compared
     * in: ids become names (a contact by its phone, a conversation by its contact and channel, an
     * instance by its conversation and number, a message by its key), the organization `ORG`, and
     * an instant `instant` (the touches are compared with the messages' instants in SQL).
     */
    async function footprint(organizationId: string) {
      const contacts = await world.sql<{ id: string; phone: string }>(`SELECT * FROM ${m('contacts')} WHERE organization_id = $1 ORDER BY phone`, [organizationId]);
      const conversations = await world.sql<{ id: string; contact_id: string; channel: string }>(
        `SELECT c.*, c.last_message_at = (SELECT max(created_at) FROM ${m('messages')} WHERE conversation_id = c.id) AS touched_at_last_message,
                c.activity_at = c.last_message_at AS active_at_last_message, c.updated_at = c.last_message_at AS updated_at_last_message
           FROM ${m('conversations')} c WHERE organization_id = $1`,
        [organizationId],
      );
      const instances = await world.sql<{ id: string; conversation_id: string; instance_number: number }>(
        `SELECT i.*, i.last_message_at = (SELECT max(created_at) FROM ${m('messages')} WHERE instance_id = i.id) AS at_last_message FROM ${m('conversation_instances')} i WHERE organization_id = $1`,
        [organizationId],
      );
      const messages = await world.sql<{ id: string; idempotency_key: string }>(`SELECT * FROM ${m('messages')} WHERE organization_id = $1 ORDER BY idempotency_key`, [organizationId]);
      const events = await world.sql<{ type: string }>(`SELECT event_id, type, payload->'data' AS data FROM ${m('outbox_events')} WHERE organization_id = $1 ORDER BY id`, [organizationId]);
      const feed = await world.sql<{ type: string }>(`SELECT type, data FROM ${m('stream_events')} WHERE organization_id = $1 ORDER BY id`, [organizationId]);
      const names = new Map<string, string>([[organizationId, 'ORG']]);
      for (const c of contacts) names.set(c.id, `contact ${c.phone}`);
      for (const c of conversations) names.set(c.id, `conversation of ${names.get(c.contact_id)} on ${c.channel}`);
      for (const i of instances) names.set(i.id, `instance ${i.instance_number} of ${names.get(i.conversation_id)}`);
      for (const x of messages) names.set(x.id, `message ${x.idempotency_key}`);
      const named = <T>(value: T): T =>
        JSON.parse(
          JSON.stringify(value, (_key, v: unknown) => {
            if (typeof v !== 'string') return v;
            if (/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$/.test(v)) return 'instant';
            let text = v;
            for (const [id, name] of names) text = text.split(id).join(name);
            return text;
          }),
        ) as T;
      const byName = (a: { id: string }, b: { id: string }) => (names.get(a.id)! < names.get(b.id)! ? -1 : 1);
      const created = (e: { type: string }) => e.type === MessagingEvents.ContactCreated;
      return named({
        contacts,
        conversations: conversations.sort(byName),
        instances: instances.sort(byName),
        messages,
        // A contact created by address is announced up front in a batch, beside its send when alone.
        events: events.filter((e) => !created(e)),
        contactsCreated: events.filter(created),
        feed: feed.filter((e) => !created(e)),
        contactsCreatedFeed: feed.filter(created),
      });
    }

    it('writes a batch of ten sends with twelve statements and one outbox insert, what the ten commands write one by one', async () => {
      const [batchOrg, aloneOrg] = [`org-${randomUUID()}`, `org-${randomUUID()}`];
      const batch = await scenario(batchOrg);
      const { statements } = await counted((tx) => runBatch(batch, tx));

      let alone = 0;
      for (const message of await scenario(aloneOrg)) {
        const { statements: one } = await counted((tx) => consumer().onSend(message, tx));
        // An outbox insert at the commit for each transaction that published.
        alone += one.filter((s) => s !== 'publish').length + (one.includes('publish') ? 1 : 0);
      }
      // Before: each command alone (one to six statements each, the outbox insert of its transaction among them).
      expect(alone).toBe(42);
      expect(statements.filter((s) => s !== 'publish').map(head)).toEqual([
        'SELECT m.*, (SELECT to_jsonb(c)',
        'SELECT DISTINCT ON (ct.organization_id,',
        'INSERT INTO contacts (organization_id,',
        // The conversations ensured per channel (sms, whatsapp), then all of them locked in one order.
        'WITH s AS (SELECT',
        'WITH s AS (SELECT',
        'SELECT * FROM conversations',
        'SELECT * FROM conversation_instances',
        'INSERT INTO conversation_instances (organization_id,',
        'WITH m AS (',
        // The opted-out contact's message and the one on a channel with no sender fail at the enqueue stage, as alone.
        'UPDATE messages SET status',
        'UPDATE messages SET status',
        // The feed items of the batch, at the commit.
        'WITH locked AS (',
      ]);

      const written = await footprint(batchOrg);
      expect(written).toEqual(await footprint(aloneOrg));
      // What that is: one message per key, the repeated and the stored key answered with theirs.
      expect(written.messages.map((x) => [x.idempotency_key, (x as unknown as { body: string }).body, (x as unknown as { status: string }).status])).toEqual([
        ['k:address', 'hello there', 'queued'],
        ['k:existing', 'hello there', 'queued'],
        ['k:fresh-1', 'first to a new conversation', 'queued'],
        ['k:fresh-2', 'second to it', 'queued'],
        ['k:member-before', 'hello there', 'queued'],
        ['k:operator', 'hello there', 'queued'],
        ['k:opted-out', 'hello there', 'failed'],
        ['k:stored', 'sent before', 'queued'],
        ['k:unsupported', 'hello there', 'failed'],
      ]);
      expect(written.events.map((e) => [(e as unknown as { event_id: string }).event_id, e.type])).toEqual([
        ['messaging.send:message k:stored', 'outbox.enqueue'],
        ['messaging.send:message k:member-before', 'outbox.enqueue'],
        ['messaging.send:message k:fresh-1', 'outbox.enqueue'],
        ['messaging.send:message k:existing', 'outbox.enqueue'],
        ['messaging.message.failed:cmd:ORG:k:invalid', 'messaging.message.failed'],
        ['messaging.send:message k:fresh-2', 'outbox.enqueue'],
        ['messaging.message.failed:message k:opted-out', 'messaging.message.failed'],
        ['messaging.send:message k:address', 'outbox.enqueue'],
        ['messaging.send:message k:operator', 'outbox.enqueue'],
        ['messaging.human_message_sent:message k:operator', 'messaging.human_message_sent'],
        ['messaging.message.failed:message k:unsupported', 'messaging.message.failed'],
      ]);
      expect(written.contactsCreated).toHaveLength(5);
      const instances = written.instances as unknown as { id: string; message_count: number; status: string }[];
      expect(instances.map((i) => [i.id, i.status, i.message_count])).toEqual([
        ['instance 1 of conversation of contact +5511988800001 on whatsapp', 'active', 2],
        ['instance 1 of conversation of contact +5511988800002 on sms', 'active', 1],
        ['instance 1 of conversation of contact +5511988800002 on whatsapp', 'active', 2],
        ['instance 1 of conversation of contact +5511988800003 on whatsapp', 'active', 1],
        ['instance 1 of conversation of contact +5511988800004 on whatsapp', 'active', 2],
        ['instance 1 of conversation of contact +5511988800009 on whatsapp', 'active', 1],
      ]);
      for (const c of written.conversations as unknown as Record<string, unknown>[]) expect(c).toMatchObject({ touched_at_last_message: true, active_at_last_message: true, updated_at_last_message: true });
      // The two sends to the new conversation keep the batch's order in its thread.
      expect(
        await world.sql(`SELECT idempotency_key FROM ${m('messages')} WHERE organization_id = $1 AND channel = 'whatsapp' AND contact_id = (SELECT id FROM ${m('contacts')} WHERE organization_id = $1 AND phone = $2) ORDER BY created_at, id`, [batchOrg, '+5511988800002']),
      ).toEqual([{ idempotency_key: 'k:fresh-1' }, { idempotency_key: 'k:fresh-2' }]);
    });

    it('rolls the whole batch back when a command fails with an error the bus retries (an unknown conversation), as a handler alone would', async () => {
      const [c, other] = [await contact(), await contact()];
      const ofOther = await sends.send(followup(other.id));
      const good = command(followup(c.id));
      const foreign = command(followup(c.id, { conversation_id: ofOther.conversation_id }));
      const before = await rowCounts();
      await expect(uow.run((tx) => runBatch([good, foreign], tx))).rejects.toMatchObject({ code: 'not_found' });
      expect(await rowCounts()).toEqual(before);
      // The bus then runs each alone: the good one is written, the other is retried.
      await uow.run((tx) => consumer().onSend(good, tx));
      await expect(uow.run((tx) => consumer().onSend(foreign, tx))).rejects.toMatchObject({ code: 'not_found' });
      expect(await world.sql(`SELECT idempotency_key FROM ${m('messages')} WHERE contact_id = $1`, [c.id])).toEqual([{ idempotency_key: good.data.idempotency_key }]);
    });

    it('costs what it did before when a command runs alone (no preparer) in the transaction of a batch', async () => {
      const c = await contact();
      const { statements } = await counted((tx) => consumer().onSend(command(followup(c.id)), tx));
      expect(statements.filter((s) => s !== 'publish').map(head)).toEqual(['SELECT m.*, (SELECT to_jsonb(c)', 'INSERT INTO conversations AS', 'WITH active AS MATERIALIZED', 'WITH locked AS (']);
    });

    it('leaves a batch of commands that all fail validation to their handlers, with no statement but their events', async () => {
      const c = await contact();
      const { statements } = await counted((tx) => runBatch([command(followup(c.id, { text: '' })), command(followup(c.id, { channel: 'fax' as never }))], tx));
      expect(statements).toEqual(['publish', 'publish']);
    });

    it('gives two batches that send to the same new contacts at once, in opposite orders, one conversation and one active instance per contact', async () => {
      const [a, b] = [await contact(), await contact()];
      const one = [command(followup(a.id)), command(followup(b.id))];
      const other = [command(followup(b.id)), command(followup(a.id))];
      // The first batch stops once it has written the conversations (uncommitted) until the second waits for them.
      let release!: () => void;
      const held = new Promise<void>((resolve) => (release = resolve));
      let paused!: () => void;
      const isPaused = new Promise<void>((resolve) => (paused = resolve));
      const first = uow.run(async (tx) => {
        const pausing: Tx = {
          ...tx,
          query: async <T>(sql: string, params?: unknown[]): Promise<T[]> => {
            const rows = await tx.query<T>(sql, params);
            if (sql.trimStart().startsWith('WITH s AS')) {
              paused();
              await held;
            }
            return rows;
          },
        };
        await runBatch(one, pausing);
      });
      await isPaused;
      let pid!: (n: number) => void;
      const known = new Promise<number>((resolve) => (pid = resolve));
      const second = uow.run(async (tx) => {
        pid((await tx.query<{ pid: number }>(`SELECT pg_backend_pid() AS pid`))[0].pid);
        await runBatch(other, tx);
      });
      const secondPid = await known;
      await eventually(async () => (await world.sql(`SELECT 1 FROM pg_locks WHERE NOT granted AND pid = $1`, [secondPid])).length > 0);
      release();
      const outcomes = await Promise.allSettled([first, second]);
      expect(outcomes.map((o) => (o.status === 'rejected' ? String((o.reason as Error).message) : 'committed'))).toEqual(['committed', 'committed']);

      for (const c of [a, b]) {
        const conversations = await world.sql<{ id: string }>(`SELECT id FROM ${m('conversations')} WHERE contact_id = $1`, [c.id]);
        expect(conversations).toHaveLength(1);
        expect(await world.sql(`SELECT status, message_count FROM ${m('conversation_instances')} WHERE conversation_id = $1`, [conversations[0].id])).toEqual([{ status: 'active', message_count: 2 }]);
        expect((await feedOf(conversations[0].id)).map((f) => f.type)).toEqual(['messaging.instance.opened', 'messaging.message.queued', 'messaging.message.queued']);
      }
    });

    it('takes commands that queue up in batches through the preparer, and a command that fails in the batch statement fails alone', async () => {
      const service = app.get(SendService);
      const sizes: number[] = [];
      const spy = jest.spyOn(service, 'prepareBatch').mockImplementation(async function (this: SendService, tx, items) {
        sizes.push(items.length);
        return SendService.prototype.prepareBatch.call(this, tx, items);
      });
      const metrics = app.get(Metrics);
      const total = async (counter: typeof metrics.busBatchRollbacks | typeof metrics.busDeadLettered) => (await counter.get()).values.reduce((n, v) => n + v.value, 0);
      const [rollbacksBefore, deadBefore] = [await total(metrics.busBatchRollbacks), await total(metrics.busDeadLettered)];
      try {
        const good: MessagingSendData[] = [];
        for (let i = 0; i < 30; i++) good.push(followup((await contact()).id, { idempotency_key: `bus:${randomUUID()}` }));
        // Valid as a command, but no uuid: the message insert fails, the batch's or its own.
        const poison = followup((await contact()).id, { idempotency_key: `bus:${randomUUID()}`, notification_delivery_id: 'not-a-uuid' });
        const all = [...good.slice(0, 10), poison, ...good.slice(10, 20), poison, ...good.slice(20)].map((data) => ({ event_id: `cmd:${randomUUID()}`, type: MessagingCommands.Send, organization_id: org, data }));
        await uow.run((tx) => tx.publish(all));
        const keys = good.map((g) => g.idempotency_key);
        await eventually(async () => (await world.sql<{ n: number }>(`SELECT count(*)::int AS n FROM ${m('messages')} WHERE idempotency_key = ANY($1)`, [keys]))[0].n === keys.length, 20_000);
        await eventually(async () => (await total(metrics.busDeadLettered)) >= deadBefore + 2, 20_000);
        expect(await world.sql(`SELECT 1 FROM ${m('messages')} WHERE idempotency_key = $1`, [poison.idempotency_key])).toEqual([]);
        expect(await world.sql<{ n: number }>(`SELECT count(*)::int AS n FROM ${m('outbox_events')} WHERE type = 'outbox.enqueue' AND payload->'data'->>'idempotency_key' = ANY($1)`, [keys])).toEqual([{ n: keys.length }]);
        // With two transaction slots (DB_POOL_SIZE 4), the commands that wait for one go together; a batch with the poison rolled back and ran one by one.
        expect(Math.max(...sizes)).toBeGreaterThan(1);
        expect(await total(metrics.busBatchRollbacks)).toBeGreaterThan(rollbacksBefore);
      } finally {
        spy.mockRestore();
      }
    });
  });
  describe('entry outcomes', () => {
    const entryOf = (sent: { message_id: string }, key: string, over: Partial<OutboxEntryEventData> = {}): OutboxEntryEventData => ({
      entry_id: randomUUID(),
      idempotency_key: key,
      channel: 'whatsapp',
      to: '+5511900000000',
      provider_message_id: null,
      log_context: { message_id: sent.message_id },
      ...over,
    });
    const bus = <T>(type: string, data: T): BusMessage<T> => ({ event_id: `${type}:${randomUUID()}`, type, organization_id: org, occurred_at: new Date().toISOString(), data }) as BusMessage<T>;
    const queued = async () => {
      const data = followup((await contact()).id);
      return { sent: await sends.send(data), key: data.idempotency_key };
    };
    const row = async (id: string) => (await world.sql(`SELECT * FROM ${m('messages')} WHERE id = $1`, [id]))[0];
    const eventsOf = async (id: string) => (await outboxOf(id)).filter((e) => e.type !== 'outbox.enqueue').map((e) => [e.event_id, e.type, e.payload.data.status ?? null, e.payload.data.error_code ?? null]);
    /** Keeps a status for a provider id no message has yet (as a status that came first is kept). */
    const keep = (wamid: string, status: string, at: Date) => uow.run((tx) => app.get(OutcomesService).status(tx, { organization_id: org, channel: 'whatsapp', external_id: wamid, status, at }));

    it('applies a consumer batch of resolutions (accepted with a kept status, rejected with a code, one on a message already failed) in two statements, writing before the commit', async () => {
      const [a, b, c] = [await queued(), await queued(), await queued()];
      const wamid = `wamid.${randomUUID()}`;
      const deliveredAt = new Date('2026-06-01T12:00:00.000Z');
      expect(await keep(wamid, 'delivered', deliveredAt)).toBe('pending');
      await uow.run((tx) => app.get(OutcomesService).failed(tx, org, entryOf(c.sent, c.key, { error_code: '131026', classification: 'recipient_undeliverable', attempts: 1 })));
      const cBefore = await row(c.sent.message_id);
      const cEvents = await eventsOf(c.sent.message_id);

      const consumer = app.get(OutcomesConsumer);
      const batch = [
        bus(OutboxEvents.EntryResolved, entryOf(a.sent, a.key, { provider_message_id: wamid, resolution: 'accepted', resolved_by: 'provider' })),
        bus(OutboxEvents.EntryResolved, entryOf(b.sent, b.key, { resolution: 'rejected', resolved_by: 'operator', error_code: '131049', error_message: 'not delivered to keep engagement healthy', attempts: 1, classification: 'recipient_undeliverable' })),
        bus(OutboxEvents.EntryResolved, entryOf(c.sent, c.key, { resolution: 'rejected', resolved_by: 'operator', error_code: 'other', attempts: 1 })),
      ];
      let beforeCommit: string[] = [];
      const { statements } = await counted(async (tx, sofar) => {
        await consumer.lockBatch(batch, tx);
        for (const message of batch) await consumer.onResolved(message, tx);
        beforeCommit = [...sofar];
      });
      // Before: the batch's two locks, then per message its provider id's lock, its read, its kept statuses, its update and its events (twelve in all).
      expect(beforeCommit).toEqual([expect.stringMatching(/^SELECT pg_advisory_xact_lock/), expect.stringMatching(/^WITH wanted AS/)]);
      expect(statements.slice(2).map((s) => s.split(' ').slice(0, 3).join(' '))).toEqual(['UPDATE messages m', 'DELETE FROM pending_statuses', 'publish', 'WITH locked AS']);

      expect(await row(a.sent.message_id)).toMatchObject({ status: 'delivered', external_id: wamid, delivered_at: deliveredAt, read_at: null, failed_at: null, error_code: null });
      expect((await row(a.sent.message_id)).sent_at).toBeInstanceOf(Date);
      expect(await world.sql(`SELECT 1 FROM ${m('pending_statuses')} WHERE external_id = $1`, [wamid])).toEqual([]);
      expect(await eventsOf(a.sent.message_id)).toEqual([
        [`messaging.message.sent:${a.sent.message_id}`, MessagingEvents.MessageSent, 'sent', null],
        [`messaging.message.delivered:${a.sent.message_id}`, MessagingEvents.MessageDelivered, 'delivered', null],
      ]);
      expect(await row(b.sent.message_id)).toMatchObject({ status: 'failed', external_id: null, error_code: '131049', error_message: 'not delivered to keep engagement healthy', sent_at: null });
      expect((await row(b.sent.message_id)).failed_at).toBeInstanceOf(Date);
      expect(await eventsOf(b.sent.message_id)).toEqual([[`messaging.message.failed:${b.sent.message_id}`, MessagingEvents.MessageFailed, 'failed', '131049']]);
      expect((await outboxOf(b.sent.message_id)).find((e) => e.type === MessagingEvents.MessageFailed)!.payload.data).toMatchObject({ failure_stage: 'delivery', requester: 'followups', idempotency_key: b.key });
      expect(await row(c.sent.message_id)).toEqual(cBefore);
      expect(await eventsOf(c.sent.message_id)).toEqual(cEvents);
      const changes = await world.sql<{ data: { message_id: string; from: string; to: string } }>(`SELECT data FROM ${m('stream_events')} WHERE type = $1 AND data->>'message_id' = ANY($2) ORDER BY id`, [
        MessagingEvents.MessageStatusChanged,
        [a.sent.message_id, b.sent.message_id],
      ]);
      expect(changes.map((e) => [e.data.message_id, e.data.from, e.data.to])).toEqual([
        [a.sent.message_id, 'queued', 'sent'],
        [a.sent.message_id, 'sent', 'delivered'],
        [b.sent.message_id, 'queued', 'failed'],
      ]);
    });

    it('applies two acceptances of one message in a batch once, and keeps a status the batch read for a handler that did not run', async () => {
      const [a, skipped] = [await queued(), await queued()];
      const [wamid, skippedWamid] = [`wamid.${randomUUID()}`, `wamid.${randomUUID()}`];
      await keep(wamid, 'read', new Date('2026-06-01T12:00:00.000Z'));
      await keep(skippedWamid, 'delivered', new Date('2026-06-01T12:00:00.000Z'));
      const consumer = app.get(OutcomesConsumer);
      const first = bus(OutboxEvents.EntryAccepted, entryOf(a.sent, a.key, { provider_message_id: wamid }));
      const again = bus(OutboxEvents.EntryAccepted, entryOf(a.sent, a.key, { provider_message_id: wamid }));
      // A duplicate event: the inbox skips its handler, but the batch's read named it.
      const duplicate = bus(OutboxEvents.EntryAccepted, entryOf(skipped.sent, skipped.key, { provider_message_id: skippedWamid }));
      await counted(async (tx) => {
        await consumer.lockBatch([first, again, duplicate], tx);
        await consumer.onAccepted(first, tx);
        await consumer.onAccepted(again, tx);
      });
      expect(await row(a.sent.message_id)).toMatchObject({ status: 'read', external_id: wamid });
      expect((await eventsOf(a.sent.message_id)).map((e) => e[1])).toEqual([MessagingEvents.MessageSent, MessagingEvents.MessageRead]);
      expect(await row(skipped.sent.message_id)).toMatchObject({ status: 'queued', external_id: null });
      expect(await world.sql(`SELECT status FROM ${m('pending_statuses')} WHERE external_id = $1`, [skippedWamid])).toEqual([{ status: 'delivered' }]);
    });

    it('writes an acceptance handled on its own (one message, the outcome sweep) before it returns, in five statements', async () => {
      const a = await queued();
      const wamid = `wamid.${randomUUID()}`;
      const { result, statements } = await counted(async (tx) => {
        await app.get(OutcomesService).accepted(tx, org, entryOf(a.sent, a.key, { provider_message_id: wamid }));
        return (await tx.query<{ status: string; external_id: string }>(`SELECT status, external_id FROM messages WHERE id = $1`, [a.sent.message_id]))[0];
      });
      expect(result).toEqual({ status: 'sent', external_id: wamid });
      // Before: six (the provider id's lock, the read, the kept statuses' delete, the update, the events, the feed).
      expect(statements.filter((s) => !s.startsWith('SELECT status, external_id'))).toHaveLength(5);
    });
  });
});
