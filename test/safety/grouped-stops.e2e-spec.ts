import { randomUUID } from 'node:crypto';
import type { SandboxClient } from '../../scripts/demo/http-clients.js';
import type { Platform } from '../e2e/platform.js';
import { wireLog } from './ledger.js';
import { expectOk, oneTextFlow, type SafetyOrg, startSafetyOrg, until } from './safety-world.js';
import { HUMAN_REPLIES, OPT_OUT_PHRASES } from './variants.js';

/** The dispatcher's reply hold (OUTBOX_REPLY_HOLD_MS default), ms: without the stops, the held sends go once it runs out. */
const REPLY_HOLD_MS = 20_000;
/** People in the burst: enough that the gateway's webhooks of the number come in while its last hand-over is under way. */
const PEOPLE = 12;

/**
 * STOPs and replies of many people that arrive together on one business number. The gateway hands
 * a number's concurrent inbound webhooks to messaging together (one RPC, one receipt insert, RPC
 * packs under them), so the stops of several people travel in one hand-over; each must still stop
 * its own person's `cancel_on_reply` follow-up, and an opt-out must still suppress the person.
 * Judged at the sandbox's wire.
 */
describe('STOPs and replies of many people arriving together on one number', () => {
  let platform: Platform;
  let sandbox: SandboxClient;
  let w: SafetyOrg;

  beforeAll(async () => {
    ({ platform, sandbox, w } = await startSafetyOrg('grouped_stops', 'Grouped stops', '7'));
  }, 240_000);
  afterAll(async () => {
    await platform?.stop();
  }, 120_000);

  it('none of them gets the follow-up, and the ones who opted out get nothing more', async () => {
    const text = `Follow-up before a burst of stops ${randomUUID().slice(0, 8)}`;
    const flowId = await w.flow('burst', oneTextFlow(text, true));
    const number = w.numbers[0]!;
    const stamp = String(Date.now()).slice(-6);
    const people = Array.from({ length: PEOPLE }, (_, i) => ({ waId: `55119${stamp}${String(i).padStart(2, '0')}`, optOut: i % 3 !== 2 }));

    // Everyone writes in and is enrolled at once: each queued send is then held by its person's reply hold.
    const who = await Promise.all(people.map((p) => w.writes(p.waId, 'Oi, quero saber mais', number)));
    const enrollments = await Promise.all(who.map(async (c, i) => expectOk<{ data: { id: string } }>('enroll', await w.enrollFollowup(flowId, c, `burst:${i}:${randomUUID()}`), 200, 201).data.id));

    // The burst: every STOP or reply at the same moment, on the same number.
    const answers = await Promise.all(people.map((p, i) => sandbox.request('POST', '/sandbox/meta/inbound', { from: p.waId, text: (p.optOut ? OPT_OUT_PHRASES[i % OPT_OUT_PHRASES.length]! : HUMAN_REPLIES[i % HUMAN_REPLIES.length]!).text, phone_number_id: number })));
    for (const answer of answers) expectOk('a stop of the burst', answer, 200);
    const stoppedAt = Date.now();

    // The barrier: every enrollment over, and none of their sends still queued. A stop that came
    // before the release leaves no send at all; one that came after takes the queued send back.
    const settled = await until(async () => {
      const all = await Promise.all(enrollments.map((id) => w.followup(id)));
      return all.every((e) => e.enrollment.finished_at && e.effects.every((f) => f.kind !== 'send' || f.status !== 'queued'));
    }, 60_000);
    expect(settled).toBe(true);
    // After the opt-outs, an operator's message to each of those people: refused, or taken and then
    // settled without reaching them (the suppression), judged at the wire below.
    for (const [i, p] of people.entries()) {
      if (!p.optOut) continue;
      const operator = await w.gateway.post(`/conversations/${who[i]!.conversationId}/messages`, { idempotency_key: `after-burst:${randomUUID()}`, text: 'Operator message after the burst' });
      expect(operator.status).toBeLessThan(500);
      if (operator.status < 300) expect(await w.settleMessage(who[i]!.conversationId, operator.body?.message_id ?? operator.body?.data?.message_id)).toBeNull();
    }
    // Past the reply hold, with a margin: a send nobody cancelled would have gone by now.
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, stoppedAt + REPLY_HOLD_MS + 8_000 - Date.now())));

    const wire = await wireLog(sandbox);
    const reached = wire.filter((c) => people.some((p) => p.waId === c.address.value) && (c.text === text || c.text === 'Operator message after the burst'));
    expect(reached).toEqual([]);
    // No send of theirs was sent: none, or one taken back (`cancelled`; an opted-out person's may end
    // `failed` when the dispatcher's suppression answers it first).
    const sends = (await Promise.all(enrollments.map((id) => w.followup(id)))).flatMap((e) => e.effects.filter((f) => f.kind === 'send').map((f) => f.status));
    expect(sends.filter((status) => status !== 'cancelled' && status !== 'failed')).toEqual([]);
  }, 240_000);
});
