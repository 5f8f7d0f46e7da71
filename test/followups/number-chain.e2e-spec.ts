import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import { randomUUID } from 'node:crypto';
import { type FlowSettings, MessagingEvents, OutboxEvents } from '@touchpoint/contracts';
import { aFlow, createTestWorld, eventually, HOUR, publishEvent, type TestWorld } from '@touchpoint/testing';
import { FixedClock } from '@touchpoint/time';
import { EnrollmentsService } from '../../apps/followups/src/enrollments/enrollments.service.js';
import { FlowsService } from '../../apps/followups/src/flows/flows.service.js';
import { NumberChain } from '../../apps/followups/src/release/number-chain.js';
import { ReleaseService } from '../../apps/followups/src/release/release.service.js';
import { startFollowups } from './followups-world.js';

type Row = Record<string, unknown>;
/** A row as these tests read it: the columns they use typed, every other column `unknown`. */
type EnrollmentRow = Row & { status: string; next_run_at: Date; sender_unavailable_since: Date };

/**
 * The sending number of a follow-up (seed 000 "send": "number (enrollment, fixed, last
 * conversation, default, any connected) unusable → retry 15 s, pause after 30 min"): the first
 * connected link of the chain sends, and with none the enrollment retries, then parks as
 * `instance_unavailable` until a number connects.
 */
describe(NumberChain.name, () => {
  let world: TestWorld;
  let app: NestFastifyApplication;
  let sut: ReleaseService;
  let schema: string;
  const start = new Date('2026-10-06T13:00:00Z');
  const clock = new FixedClock(start);
  // Events about senders must be newer than the last one applied (the read model keeps the newest).
  let eventAt = Date.now();

  beforeAll(async () => {
    world = await createTestWorld('fu_numbers');
    app = await startFollowups(world, { clock });
    sut = app.get(ReleaseService);
    schema = world.schema('followups');
  });
  afterAll(() => world.close());
  afterEach(() => clock.set(start));

  const sql = <T = Row>(text: string, params?: unknown[]) => world.sql<T>(text.replaceAll('fu.', `"${schema}".`), params);
  const enrollment = async (id: string) => (await sql<EnrollmentRow>(`SELECT * FROM fu.enrollments WHERE id = $1`, [id]))[0];
  const sendEffect = async (id: string) => (await sql(`SELECT * FROM fu.effects WHERE enrollment_id = $1 AND kind = 'send'`, [id]))[0];

  async function setSender(org: string, sender: string, status: 'connected' | 'disconnected', isDefault = false): Promise<void> {
    const type = status === 'connected' ? OutboxEvents.SenderConnected : OutboxEvents.SenderDisconnected;
    await publishEvent(world, type, org, { sender_id: sender, channel: 'whatsapp', is_default: isDefault, status }, new Date((eventAt += 1000)));
    await eventually(async () => (await sql(`SELECT status FROM fu.senders WHERE sender_id = $1`, [sender]))[0]?.status === status);
  }

  async function activeFlow(org: string, settings: FlowSettings): Promise<string> {
    const flows = app.get(FlowsService);
    const flow = await flows.create({ organization_id: org, name: `flow ${randomUUID().slice(0, 6)}`, graph: aFlow().graph, settings });
    const published = await flows.publish({ organization_id: org, flow_id: flow.id, expected_revision: 1 });
    await flows.setStatus({ organization_id: org, flow_id: flow.id, expected_revision: published.revision, status: 'active' });
    return flow.id;
  }

  /** A contact who wrote an hour ago (24-hour window open) to `toSender`, as messaging reports it. */
  async function contactWhoWroteTo(org: string, toSender?: string): Promise<string> {
    const contactId = randomUUID();
    await publishEvent(
      world,
      MessagingEvents.MessageReceived,
      org,
      {
        message_id: randomUUID(),
        conversation_id: randomUUID(),
        instance_id: randomUUID(),
        contact_id: contactId,
        channel: 'whatsapp',
        direction: 'inbound',
        external_id: `wamid.${contactId}`,
        text: 'oi',
        message_type: 'text',
        auto_reply: false,
        opt_out: false,
        from: '+5592988887777',
        ...(toSender ? { sender_id: toSender } : {}),
      },
      new Date(clock.now().getTime() - HOUR),
    );
    await eventually(async () => (await sql(`SELECT 1 FROM fu.contacts WHERE contact_id = $1`, [contactId])).length === 1);
    return contactId;
  }

  const enroll = async (org: string, flowId: string, contactId: string, senderId?: string) =>
    (await app.get(EnrollmentsService).create({ organization_id: org, flow_id: flowId, contact_id: contactId, operation_key: randomUUID(), ...(senderId ? { sender_id: senderId } : {}) })).enrollment;

  it('sends from the first connected number of: the enrollment’s, the flow’s fixed one, the last conversation’s, the default, any connected', async () => {
    const org = randomUUID();
    const [own, fixed, last, dflt, other] = [randomUUID(), randomUUID(), randomUUID(), randomUUID(), randomUUID()];
    await setSender(org, other, 'connected');
    await setSender(org, dflt, 'connected', true);
    for (const s of [own, fixed, last]) await setSender(org, s, 'connected');
    const flowId = await activeFlow(org, { ...aFlow().settings, sender: { mode: 'fixed', sender_id: fixed } });

    // Each round takes one more link of the chain away; a new enrollment asks for all of them again.
    const rounds: { down?: string; expected: string }[] = [{ expected: own }, { down: own, expected: fixed }, { down: fixed, expected: last }, { down: last, expected: dflt }, { down: dflt, expected: other }];
    for (const round of rounds) {
      if (round.down) await setSender(org, round.down, 'disconnected');
      const e = await enroll(org, flowId, await contactWhoWroteTo(org, last), own);
      expect(await sut.releaseOne()).toBe('released');
      expect({ down: round.down, sender: (await sendEffect(e.id))?.sender_id }).toEqual({ down: round.down, sender: round.expected });
      // The number it went out on becomes the enrollment's own: its next sends keep the conversation on it.
      expect(await enrollment(e.id)).toMatchObject({ status: 'completed', sender_id: round.expected });
      const [command] = await sql<{ payload: { data: unknown } }>(`SELECT payload FROM fu.outbox_events WHERE type = 'messaging.send' AND event_id LIKE $1`, [`followup:${e.id}:%`]);
      expect(command.payload.data).toMatchObject({ outbox_sender_id: round.expected });
    }
  });

  it('passes over a named number of another organization, and one the read model does not know', async () => {
    const org = randomUUID();
    const foreign = randomUUID();
    const dflt = randomUUID();
    await setSender(randomUUID(), foreign, 'connected');
    await setSender(org, dflt, 'connected', true);
    const flowId = await activeFlow(org, { ...aFlow().settings, sender: { mode: 'fixed', sender_id: randomUUID() } });
    const e = await enroll(org, flowId, await contactWhoWroteTo(org), foreign);
    expect(await sut.releaseOne()).toBe('released');
    expect((await sendEffect(e.id)).sender_id).toBe(dflt);
  });

  it('retries every 15 s with no usable number, parks as instance_unavailable after 30 min, and goes on when a number connects', async () => {
    const org = randomUUID();
    const fixed = randomUUID();
    const later = randomUUID();
    await setSender(org, fixed, 'disconnected');
    const flowId = await activeFlow(org, { ...aFlow().settings, sender: { mode: 'fixed', sender_id: fixed } });
    const e = await enroll(org, flowId, await contactWhoWroteTo(org));

    expect(await sut.releaseOne()).toBe('released');
    let row = await enrollment(e.id);
    expect(row).toMatchObject({ status: 'active', node_id: 'a' });
    expect(row.next_run_at.getTime()).toBe(clock.now().getTime() + 15_000);
    expect(row.sender_unavailable_since.getTime()).toBe(clock.now().getTime());

    clock.advance(15_000);
    expect(await sut.releaseOne()).toBe('released');
    expect((await enrollment(e.id)).next_run_at.getTime()).toBe(clock.now().getTime() + 15_000);
    expect(await sendEffect(e.id)).toBeUndefined();

    clock.set(new Date(start.getTime() + 30 * 60_000));
    expect(await sut.releaseOne()).toBe('released');
    row = await enrollment(e.id);
    expect(row).toMatchObject({ status: 'dormente', reason: 'instance_unavailable' });
    const [parked] = await sql(`SELECT data FROM fu.enrollment_events WHERE enrollment_id = $1 AND type = 'parked'`, [e.id]);
    expect(parked.data).toEqual({ reason: 'instance_unavailable' });
    expect(await sendEffect(e.id)).toBeUndefined();

    // Any number of the organization coming up wakes it; the chain then finds that one.
    await setSender(org, later, 'connected');
    await eventually(async () => (await enrollment(e.id)).status === 'active');
    clock.advance(1000);
    expect(await sut.releaseOne()).toBe('released');
    expect(await sendEffect(e.id)).toMatchObject({ status: 'queued', sender_id: later });
    expect(await enrollment(e.id)).toMatchObject({ status: 'completed', sender_unavailable_since: null });
  });
});
