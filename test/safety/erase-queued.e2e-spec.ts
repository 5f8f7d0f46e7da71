import { randomUUID } from 'node:crypto';
import type { SandboxClient } from '../../scripts/demo/http-clients.js';
import type { Platform } from '../e2e/platform.js';
import { wireLog } from './ledger.js';
import { expectOk, type SafetyOrg, startSafetyOrg, until } from './safety-world.js';

/** Seed 004: two sends to one WhatsApp pair start at least this far apart, ms (the default). */
const PAIR_INTERVAL_MS = 6_500;
/** A send already claimed when the erase committed may still reach the wire this long after it, ms. */
const IN_FLIGHT_MARGIN_MS = 1_000;

/**
 * Erasing a contact takes back what is still queued to them (the cross-service promise: messaging
 * erases, the dispatcher holds the entries). Four operator messages to one person are paced 6.5 s
 * apart on their pair; the erase lands after the first reached the wire. Judged at the wire: no
 * text reaches the person after the erase (one already claimed may, within a second), and the
 * messages not sent end `cancelled`.
 */
describe('erasing a contact with operator sends still queued', () => {
  let platform: Platform;
  let sandbox: SandboxClient;
  let w: SafetyOrg;

  beforeAll(async () => {
    ({ platform, sandbox, w } = await startSafetyOrg('erase_queued', 'Erase queued', '9'));
  }, 240_000);
  afterAll(async () => {
    await platform?.stop();
  }, 120_000);

  it('cancels the queued sends: nothing reaches the person after the erase, and those messages end cancelled', async () => {
    const waId = `55119${String(Date.now()).slice(-8)}`;
    const who = await w.writes(waId, 'Oi, quero saber mais', w.numbers[0]!);
    const texts = [1, 2, 3, 4].map((n) => `Private detail ${n} for ${randomUUID().slice(0, 8)}`);
    const ids: string[] = [];
    for (const text of texts) {
      const body = expectOk<{ message_id?: string; id?: string }>('operator send', await w.gateway.post(`/conversations/${who.conversationId}/messages`, { idempotency_key: `erase:${randomUUID()}`, text }), 201);
      ids.push(String(body.message_id ?? body.id));
    }
    const mine = async () => (await wireLog(sandbox)).filter((c) => c.address.value === waId && texts.includes(c.text));
    await until(async () => (await mine()).length >= 1, 30_000);

    expectOk('erase', await w.gateway.post(`/contacts/${who.contactId}/erase`, {}), 200);
    const erasedAt = Date.now();
    for (const id of ids) expect(await w.settleMessage(who.conversationId, id, 30_000)).toBeNull();
    // Two more pair intervals: a send the erase missed would have gone by now.
    await new Promise((resolve) => setTimeout(resolve, 2 * PAIR_INTERVAL_MS));

    const wire = await mine();
    expect(wire.filter((c) => c.arrivedAt > erasedAt + IN_FLIGHT_MARGIN_MS).map((c) => c.text)).toEqual([]);
    expect(wire.length).toBeLessThanOrEqual(2);
    const statuses = (await w.messages(who.conversationId)).filter((m) => ids.includes(String(m.id ?? m.message_id))).map((m) => m.status);
    expect(statuses.filter((s) => s === 'cancelled')).toHaveLength(ids.length - wire.length);
  }, 120_000);
});
