import { jest } from '@jest/globals';
import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import amqplib from 'amqplib';
import { randomUUID } from 'node:crypto';
import { BusNames } from '@touchpoint/bus';
import { type FlowSettings, MessagingEvents } from '@touchpoint/contracts';
import type { Logger } from '@touchpoint/observability';
import { LOGGER } from '@touchpoint/runtime';
import { anActiveFlow, aWaitingFlow, createTestWorld, eventually, type FlowShape, publishEvent, type TestWorld, aMessageReceived } from '@touchpoint/testing';
import { FixedClock } from '@touchpoint/time';
import { EnrollmentsService } from '../../apps/followups/src/enrollments/enrollments.service.js';
import { FlowsService } from '../../apps/followups/src/flows/flows.service.js';
import { startFollowups } from './followups-world.js';

type Row = Record<string, unknown>;

/**
 * A stop path commits whatever an optional side write in its transaction does: recording a rule
 * trigger (seed 000 "Rules": `recordTrigger` in the transaction of the event) is such a write, and
 * when PostgreSQL refuses it the reply or resolution must still stop the enrollment, in its first
 * attempt (one attempt here: a failed one would go straight to the dead-letter queue).
 */
describe('stop paths and the trigger they record', () => {
  let world: TestWorld;
  let followups: NestFastifyApplication;
  let logged: ReturnType<typeof jest.spyOn>;
  const clock = new FixedClock(new Date('2026-10-06T13:00:00Z'));

  beforeAll(async () => {
    world = await createTestWorld('fu_stopside');
    followups = await startFollowups(world, { clock, env: { BUS_MAX_ATTEMPTS: '1' } });
    logged = jest.spyOn(followups.get<Logger>(LOGGER), 'error');
    // A fault on purpose: the triggers table refuses every conversation_resolved row and every row of a text marked REFUSED.
    await world.sql(`
      CREATE FUNCTION "${world.schema('followups')}".refuse_trigger() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF NEW.type = 'conversation_resolved' OR NEW.data ->> 'text' LIKE '%REFUSED%' THEN RAISE EXCEPTION 'refused on purpose' USING ERRCODE = '23514'; END IF;
        RETURN NEW;
      END $$`);
    await world.sql(`CREATE TRIGGER refuse_trigger BEFORE INSERT ON "${world.schema('followups')}".triggers FOR EACH ROW EXECUTE FUNCTION "${world.schema('followups')}".refuse_trigger()`);
  });
  afterAll(() => world.close());

  const fu = (table: string) => `"${world.schema('followups')}".${table}`;

  const activeFlow = (org: string, flow: FlowShape) => anActiveFlow(followups.get(FlowsService), org, { name: `fluxo ${randomUUID().slice(0, 6)}`, ...flow });

  async function deadLetters(): Promise<number> {
    const connection = await amqplib.connect(world.amqpUrl);
    try {
      const channel = await connection.createChannel();
      return (await channel.checkQueue(new BusNames(world.namespace, 'followups').deadLetterQueue)).messageCount;
    } finally {
      await connection.close();
    }
  }

  /** A reply of the contact, as messaging publishes it. */
  const reply = (text: string) => (contactId: string, conversationId: string) => aMessageReceived(contactId, { conversation_id: conversationId, external_id: `wamid.${randomUUID()}`, text });
  const keywordRule = { kind: 'inbound_keyword' as const, cancel_on_reply: false, keywords: ['preço'] };

  /**
   * An organization with a rule listening for `rule`'s kind and a contact live in a flow that stops
   * on reply; publishes the event a minute after the enrollment (an older reply is not a reply to it).
   */
  async function stopEvent(rule: FlowSettings['trigger'], type: string, data: (contactId: string, conversationId: string) => object) {
    const org = randomUUID();
    const contactId = randomUUID();
    const conversationId = randomUUID();
    await activeFlow(org, aWaitingFlow(rule));
    const stopping = await activeFlow(org, aWaitingFlow({ kind: 'manual', cancel_on_reply: true }));
    const { enrollment } = await followups.get(EnrollmentsService).create({ organization_id: org, flow_id: stopping, contact_id: contactId, conversation_id: conversationId, operation_key: randomUUID() });
    expect(enrollment.status).toBe('active');
    logged.mockClear();
    const event = await publishEvent(world, type, org, data(contactId, conversationId), new Date(clock.now().getTime() + 60_000));
    // Handled (in one attempt: a failed one would be in the dead-letter queue now).
    await eventually(async () => (await world.sql(`SELECT 1 FROM ${fu('inbox_events')} WHERE event_id = $1`, [event.event_id])).length > 0);
    expect(await deadLetters()).toBe(0);
    return {
      org,
      event,
      enrollment: (await world.sql<Row>(`SELECT status, reason FROM ${fu('enrollments')} WHERE id = $1`, [enrollment.id]))[0],
      triggers: await world.sql<Row>(`SELECT type FROM ${fu('triggers')} WHERE organization_id = $1`, [org]),
      failures: logged.mock.calls.map((args: unknown[]) => args[0] as Row).filter((f: Row) => f?.event === 'followups.trigger_record_failed'),
    };
  }

  it.each([
    { stop: 'a reply', kind: 'inbound_keyword', rule: keywordRule, reason: 'replied', type: MessagingEvents.MessageReceived, data: reply('Qual o preço? REFUSED') },
    {
      stop: 'a resolution',
      kind: 'conversation_resolved',
      rule: { kind: 'conversation_resolved' as const, cancel_on_reply: false },
      reason: 'conversation_resolved',
      type: MessagingEvents.ConversationResolved,
      data: (contactId: string, conversationId: string) => ({ conversation_id: conversationId, contact_id: contactId, channel: 'whatsapp', resolved_by: null }),
    },
  ])('$stop stops the enrollment in its first attempt when the triggers table refuses its trigger row, and logs the failure', async ({ kind, rule, reason, type, data }) => {
    const seen = await stopEvent(rule, type, data);
    expect(seen.enrollment).toEqual({ status: 'completed', reason });
    expect(seen.triggers).toEqual([]);
    expect(seen.failures).toEqual([expect.objectContaining({ kind, event_id: seen.event.event_id, organization_id: seen.org, code: '23514' })]);
  });

  it('stops the enrollment when the reply holds a lone surrogate (PostgreSQL refuses it in JSON); its trigger is recorded or its failure logged, never lost silently', async () => {
    const seen = await stopEvent(keywordRule, MessagingEvents.MessageReceived, reply('Qual o preço? \uD83D'));
    expect(seen.enrollment).toEqual({ status: 'completed', reason: 'replied' });
    expect(seen.triggers.length + seen.failures.length).toBe(1);
  });
});
