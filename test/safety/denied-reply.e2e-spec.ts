import { randomUUID } from 'node:crypto';
import type { SandboxClient } from '../../scripts/demo/http-clients.js';
import type { Platform } from '../e2e/platform.js';
import { wireLog } from './ledger.js';
import { expectOk, oneTextFlow, type SafetyOrg, startSafetyOrg, until } from './safety-world.js';

/** The dispatcher's reply hold (OUTBOX_REPLY_HOLD_MS default), ms: without the stop, the held send goes once it runs out. */
const REPLY_HOLD_MS = 20_000;

/**
 * A person whose answer the abuse check refuses (rate-limited, so messaging does not store it) has
 * still answered: a `cancel_on_reply` follow-up must not reach them. The cross-service promise:
 * messaging denies and publishes `messaging.inbound.denied`, followups stops the enrollment and
 * cancels its queued send, while the dispatcher's reply hold keeps it off the wire meanwhile.
 * Judged at the sandbox's wire.
 */
describe('a reply the abuse check denies', () => {
  let platform: Platform;
  let sandbox: SandboxClient;
  let w: SafetyOrg;

  beforeAll(async () => {
    ({ platform, sandbox, w } = await startSafetyOrg('denied_reply', 'Denied reply', '8'));
  }, 240_000);
  afterAll(async () => {
    await platform?.stop();
  }, 120_000);

  it('stops the cancel_on_reply flow and nothing of it reaches the person', async () => {
    const waId = `55118${String(Date.now()).slice(-8)}`;
    const text = `Follow-up after a denied reply ${randomUUID().slice(0, 8)}`;
    const flowId = await w.flow('denied reply', oneTextFlow(text, true));
    // This organization's limit is one inbound message an hour per contact (a scope row of abuse's
    // `rate_limit_config`, which no route writes): the person's first message is stored, the next
    // one in the same clock hour denied. Away from the hour's end, so both fall inside one window.
    await platform.world.sql(`INSERT INTO "${platform.world.schema('abuse')}".rate_limit_config (organization_id, channel, user_type, per_minute, per_hour, per_day, per_instance) VALUES ($1, '*', 'all', 100, 1, 100, 500)`, [w.id]);
    const now = new Date();
    if (now.getUTCMinutes() === 59) await new Promise((resolve) => setTimeout(resolve, (61 - now.getUTCSeconds()) * 1000));
    const who = await w.writes(waId, 'Oi, quero saber mais', w.numbers[0]!);

    const enrollmentId = expectOk<{ data: { id: string } }>('enroll', await w.enrollFollowup(flowId, who, `denied:${randomUUID()}`), 200, 201).data.id;
    // At once: the send the enrollment queues is held by the reply hold of the first message (20 s).
    const reply = 'já resolvi, obrigado';
    expectOk('the reply', await sandbox.request('POST', '/sandbox/meta/inbound', { from: waId, text: reply, phone_number_id: w.numbers[0] }), 200);
    const repliedAt = Date.now();

    // The barrier: the send taken back (the one-text flow itself completes as soon as it queues it).
    await until(async () => (await w.followup(enrollmentId)).effects.some((e) => e.kind === 'send' && e.status === 'cancelled'), 30_000);
    // Past the reply hold, with a margin: a send nobody cancelled would have gone by now.
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, repliedAt + REPLY_HOLD_MS + 8_000 - Date.now())));

    // The scenario holds only if abuse did refuse the reply: messaging never stored it.
    expect((await w.messages(who.conversationId)).filter((m) => (m.body ?? m.text) === reply)).toEqual([]);
    expect((await wireLog(sandbox)).filter((c) => c.address.value === waId && c.text === text)).toEqual([]);
    const final = await w.followup(enrollmentId);
    expect(final.effects.filter((e) => e.kind === 'send').map((e) => e.status)).toEqual(['cancelled']);
  }, 180_000);
});
