import { randomUUID } from 'node:crypto';
import { aWhatsAppNumber, createTestWorld, eventually, type TestWorld } from '@touchpoint/testing';
import { Clock } from '@touchpoint/time';
import { type Dispatcher, SandboxHandle, startDispatcher, textTo } from './harness.js';

/** How long the database holds the claim's transaction after the first attempt opened, ms. */
const CLAIM_TO_WIRE_DELAY_MS = 800;
/** Seed 004 "Pacing": two attempt starts on one pair at least this far apart. */
const PAIR_MIN_SEND_INTERVAL_MS = 6500;

/**
 * Pacing holds where the provider sees it (seed 004 "Pacing: per-pair FIFO, measured at attempt
 * start"): the gap between two requests on one pair, as the Meta sandbox saw them arrive, is at
 * least the interval even when the first request left long after its attempt was opened (a slow
 * commit of the claim, a busy process). The real clock and the continuous drain: the interval is
 * waited for in real time.
 */
describe('pair pacing at the wire', () => {
  let world: TestWorld;
  let sandbox: SandboxHandle;
  let d: Dispatcher;
  let org: string;

  const schema = () => world.schema('outbox-dispatcher');

  beforeAll(async () => {
    world = await createTestWorld('outbox_wire_pacing');
    sandbox = await SandboxHandle.start();
    d = await startDispatcher(world, sandbox, {}, new Clock() as never);
    org = `org-${randomUUID()}`;
    await aWhatsAppNumber(d, org, '100000000000031');
  });
  afterAll(async () => {
    await world.close();
    await sandbox.close();
  });

  it('keeps two requests on one pair 6500 ms apart at the provider when the first left 800 ms after its attempt opened', async () => {
    const to = `55119${String(Date.now()).slice(-8)}`;
    const first = await d.enqueue.enqueue(textTo(org, to));
    const second = await d.enqueue.enqueue(textTo(org, to));
    // A slow database: the claim that opens the first attempt commits CLAIM_TO_WIRE_DELAY_MS after it stamped the pair.
    await world.sql(`
      CREATE FUNCTION "${schema()}".hold_first_claim() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF NEW.entry_id = '${first.entry_id}' AND NEW.attempt_number = 1 THEN PERFORM pg_sleep(${CLAIM_TO_WIRE_DELAY_MS / 1000}); END IF;
        RETURN NEW;
      END $$`);
    await world.sql(`CREATE TRIGGER hold_first_claim AFTER INSERT ON "${schema()}".message_outbox_attempts FOR EACH ROW EXECUTE FUNCTION "${schema()}".hold_first_claim()`);

    d.drain.start();
    const calls = await eventually(
      async () => {
        const { calls } = await sandbox.get<{ calls: { operation: string; context: Record<string, string>; arrived_at: number; body: { biz_opaque_callback_data?: string } }[] }>('/sandbox/control/meta/received');
        const mine = calls.filter((c) => c.operation === 'messages' && c.context.wa_id === to);
        return mine.length >= 2 ? mine : undefined;
      },
      30_000,
      100,
    );

    expect(calls.map((c) => c.body.biz_opaque_callback_data)).toEqual([first.entry_id, second.entry_id]);
    const [opened] = await world.sql<{ started_at: Date }>(`SELECT started_at FROM "${schema()}".message_outbox_attempts WHERE entry_id = $1`, [first.entry_id]);
    // The forced delay happened: the first request reached the provider well after its attempt opened.
    expect(calls[0]!.arrived_at - opened!.started_at.getTime()).toBeGreaterThanOrEqual(CLAIM_TO_WIRE_DELAY_MS);
    expect(calls[1]!.arrived_at - calls[0]!.arrived_at).toBeGreaterThanOrEqual(PAIR_MIN_SEND_INTERVAL_MS);
  });
});
