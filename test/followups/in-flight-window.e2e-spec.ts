import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import { randomUUID } from 'node:crypto';
import { aFlow, aProvisionedNumber, createTestWorld, eventually, HOUR, type TestWorld } from '@touchpoint/testing';
import { FixedClock } from '@touchpoint/time';
import { EnrollmentsService } from '../../apps/followups/src/enrollments/enrollments.service.js';
import { FlowsService } from '../../apps/followups/src/flows/flows.service.js';
import { InFlightWindow } from '../../apps/followups/src/release/in-flight-window.js';
import { ReleaseService } from '../../apps/followups/src/release/release.service.js';
import { inboundPipeline } from '../messaging/inbound-pipeline.js';
import { inboundText, newWamid, setLimits } from '../messaging/helpers.js';
import { type Dispatcher, SandboxHandle } from '../outbox/harness.js';
import { startFollowupsWithSendPath } from './followups-world.js';

type Row = Record<string, unknown>;

/** The window of the test: two follow-ups in flight per number. */
const WINDOW = 2;
const BACKLOG_RETRY_MS = 5000;
/** Waits for a condition across several services on a busy machine (up to 30 s). */
const soon = <T>(probe: () => Promise<T>) => eventually(probe, 30_000, 100);

/**
 * The per-number window of follow-ups in flight (seed 000 "send": "window of follow-up messages
 * QUEUED/PROCESSING per number · … backlog → defer"), through followups → messaging →
 * outbox-dispatcher → the Meta sandbox: while Meta refuses the number's sends, no more than the
 * window's follow-ups reach it, the rest wait with a reason on their timeline, and once Meta
 * accepts they go out.
 */
describe(InFlightWindow.name, () => {
  let world: TestWorld;
  let sandbox: SandboxHandle;
  let dispatcher: Dispatcher;
  let followups: NestFastifyApplication;
  let messaging: NestFastifyApplication;
  let sut: ReleaseService;
  const org = randomUUID();
  const phoneNumberId = `${Date.now()}`.slice(-12);
  // Before the contacts' real messages (they come with the real time), so those are not replies.
  const clock = new FixedClock(new Date(Date.now() - HOUR));
  let inboundSeconds = Math.floor(Date.now() / 1000);

  beforeAll(async () => {
    world = await createTestWorld('fu_window');
    sandbox = await SandboxHandle.start();
    ({ dispatcher, messaging, followups } = await startFollowupsWithSendPath(world, sandbox, { clock, followupsEnv: { FOLLOWUP_SENDER_INFLIGHT_WINDOW: String(WINDOW), FOLLOWUP_SENDER_BACKLOG_RETRY_MS: String(BACKLOG_RETRY_MS) } }));
    sut = followups.get(ReleaseService);
    await setLimits(world, org, {});
    // The dispatcher announces the number; messaging and followups keep it in their read models.
    await aProvisionedNumber(world, dispatcher, org, phoneNumberId);
  });
  afterAll(async () => {
    await world.close();
    await sandbox.close();
  });

  const fu = (table: string) => `"${world.schema('followups')}".${table}`;
  const enrollment = async (id: string) => (await world.sql<Row & { next_run_at: Date }>(`SELECT * FROM ${fu('enrollments')} WHERE id = $1`, [id]))[0];
  const sendEffect = async (id: string) => (await world.sql<Row & { idempotency_key: string }>(`SELECT * FROM ${fu('effects')} WHERE enrollment_id = $1 AND kind = 'send'`, [id]))[0];
  const timeline = (id: string, type: string) => world.sql<{ data: { reason: string } }>(`SELECT data FROM ${fu('enrollment_events')} WHERE enrollment_id = $1 AND type = $2 ORDER BY id`, [id, type]);
  const outboxEntry = async (key: string) => (await world.sql<Row>(`SELECT * FROM "${world.schema('outbox-dispatcher')}".message_outbox WHERE idempotency_key = $1`, [key]))[0];
  /** Follow-up texts Meta's stand-in received (accepted or refused), per recipient. */
  const wireTexts = async () => (await sandbox.received()).filter((c) => c.context.type === 'text');
  const clearFaults = async () => {
    const res = await fetch(`${sandbox.url}/sandbox/control/meta/faults`, { method: 'DELETE' });
    expect(res.ok).toBe(true);
  };
  /** One drain pass after moving the dispatcher's clock past the pair pacing (6.5 s) and a retry's backoff. */
  const drain = async (advanceMs = 120_000) => {
    dispatcher.clock.advance(advanceMs);
    await dispatcher.drain.drain(5000);
  };

  async function contactWrites(waId: string): Promise<{ contactId: string; conversationId: string }> {
    const text = `Oi, aqui é ${waId}`;
    await inboundPipeline(messaging).whatsapp(inboundText(newWamid(), waId, text, (inboundSeconds += 5), phoneNumberId));
    const [row] = await world.sql<{ contact_id: string; conversation_id: string }>(`SELECT contact_id, conversation_id FROM "${world.schema('messaging')}".messages WHERE direction = 'inbound' AND body = $1 ORDER BY created_at DESC LIMIT 1`, [text]);
    await soon(async () => (await world.sql(`SELECT 1 FROM ${fu('contacts')} WHERE contact_id = $1 AND last_inbound_text = $2`, [row!.contact_id, text])).length === 1);
    return { contactId: row!.contact_id, conversationId: row!.conversation_id };
  }

  it('holds a number’s follow-ups beyond the window while Meta refuses its sends, and releases them once Meta accepts', async () => {
    const flows = followups.get(FlowsService);
    const flow = await flows.create({ organization_id: org, name: 'one text', ...aFlow() });
    const published = await flows.publish({ organization_id: org, flow_id: flow.id, expected_revision: 1 });
    await flows.setStatus({ organization_id: org, flow_id: flow.id, expected_revision: published.revision, status: 'active' });

    const waIds = ['5592988881001', '5592988881002', '5592988881003', '5592988881004', '5592988881005'];
    const people: { contactId: string; conversationId: string }[] = [];
    for (const waId of waIds) people.push(await contactWrites(waId));
    // The inbound messages' read receipts go first on each pair: out of the way before the test.
    await soon(async () => (await world.sql(`SELECT 1 FROM "${world.schema('outbox-dispatcher')}".message_outbox WHERE status = 'pending'`)).length === waIds.length);
    await drain();
    expect(await wireTexts()).toEqual([]);

    // Meta answers every text on the number with a transient error: the dispatcher keeps them for a retry.
    await sandbox.fault({ kind: 'error', code: 131000, status: 500, match: { type: 'text' }, times: 1000 });
    const ids: string[] = [];
    for (const who of people) {
      const { enrollment: e } = await followups.get(EnrollmentsService).create({ organization_id: org, flow_id: flow.id, contact_id: who.contactId, conversation_id: who.conversationId, operation_key: randomUUID() });
      ids.push(e.id);
    }
    for (let i = 0; i < ids.length; i++) expect(await sut.releaseOne()).toBe('released');
    const queued: string[] = [];
    const held: string[] = [];
    for (const id of ids) ((await sendEffect(id)) ? queued : held).push(id);
    expect(queued).toHaveLength(WINDOW);
    for (const id of held) {
      const row = await enrollment(id);
      expect(row).toMatchObject({ status: 'active', node_id: 'a', inflight_effect_id: null });
      expect(row.next_run_at.getTime()).toBe(clock.now().getTime() + BACKLOG_RETRY_MS);
      expect((await timeline(id, 'deferred')).map((t) => t.data.reason)).toEqual(['sender_backlog']);
    }

    // Blocked: the dispatcher tries the two, Meta refuses them, and the held ones stay held.
    for (const id of queued) await soon(async () => (await outboxEntry((await sendEffect(id)).idempotency_key))?.status === 'pending');
    await drain(7000);
    clock.advance(BACKLOG_RETRY_MS);
    for (let i = 0; i < held.length; i++) expect(await sut.releaseOne()).toBe('released');
    await drain(60_000);
    const whileBlocked = await wireTexts();
    expect(whileBlocked.length).toBeGreaterThanOrEqual(WINDOW);
    expect(whileBlocked.every((c) => c.outcome === 'error_131000')).toBe(true);
    expect(new Set(whileBlocked.map((c) => c.context.wa_id)).size).toBe(WINDOW);
    for (const id of queued) expect(await sendEffect(id)).toMatchObject({ status: 'queued' });
    for (const id of held) {
      expect(await sendEffect(id)).toBeUndefined();
      // Deferred again, announced once: a long outage does not flood the timeline.
      expect((await timeline(id, 'deferred')).map((t) => t.data.reason)).toEqual(['sender_backlog']);
      const plans = await world.sql<Row>(`SELECT reason FROM ${fu('effects')} WHERE enrollment_id = $1 AND kind = 'schedule_plan'`, [id]);
      expect(plans).toEqual([{ reason: 'sender_backlog' }]);
    }

    // Meta accepts again: the two go out, followups learns it, and the held ones follow, a window at a time.
    await clearFaults();
    for (let round = 0; round < 4 && (await wireTexts()).filter((c) => c.outcome === 'accepted').length < waIds.length; round++) {
      await drain();
      await soon(async () => {
        const effects = await Promise.all(ids.map(sendEffect));
        return effects.every((f) => !f || f.status !== 'queued');
      });
      clock.advance(BACKLOG_RETRY_MS);
      while ((await sut.releaseOne()) !== 'idle');
      for (const id of ids) {
        const key = (await sendEffect(id))?.idempotency_key;
        if (key) await soon(async () => (await outboxEntry(key)) !== undefined);
      }
    }
    const accepted = (await wireTexts()).filter((c) => c.outcome === 'accepted');
    expect(accepted.map((c) => c.context.wa_id).sort()).toEqual([...waIds].sort());
    for (const id of ids) {
      expect(await sendEffect(id)).toMatchObject({ status: 'sent' });
      expect(await enrollment(id)).toMatchObject({ status: 'completed' });
    }
  });
});
