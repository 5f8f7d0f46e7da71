import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { createTestWorld, TEST_DATABASE_URL, type TestWorld } from '@touchpoint/testing';
import { AbuseConfig } from '../../apps/abuse/src/abuse.config.js';
import { AbuseModule } from '../../apps/abuse/src/abuse.module.js';
import { MessagingConfig } from '../../apps/messaging/src/messaging.config.js';
import { MessagingModule } from '../../apps/messaging/src/messaging.module.js';
import { type InboundPipeline, inboundPipeline } from './inbound-pipeline.js';
import { inboundText, newWamid, registerSender, restrictInReadModel, setLimits } from './helpers.js';

/**
 * Seed 004 "When the Check Itself Fails", with the abuse service running but its check unable to
 * answer in time (the conversation's counter row is held by another transaction, so the check waits
 * past ABUSE_CHECK_TIMEOUT_MS): messaging then reads the block in force from the abuse service's
 * own actions, not only from its event-fed copy, which may be behind.
 */
describe('inbound when the abuse check times out but the abuse service answers', () => {
  let world: TestWorld;
  let sut: InboundPipeline;
  let held: pg.Client;
  const org = `org-${randomUUID()}`;
  const pnid = `pn-${randomUUID()}`;
  const m = () => world.schema('messaging');
  let ts = 1_760_200_000;

  beforeAll(async () => {
    world = await createTestWorld('abusestate');
    await world.start(AbuseModule.forRoot(world.config(AbuseConfig, { ABUSE_EXPIRY_INTERVAL_MS: '0' })));
    const app: NestFastifyApplication = await world.start(MessagingModule.forRoot(world.config(MessagingConfig, { INSTANCE_SWEEP_INTERVAL_MS: '0', OUTCOME_SWEEP_INTERVAL_MS: '0', SUMMARIES: 'off', ABUSE_CHECK_TIMEOUT_MS: '300', ABUSE_STATE_TIMEOUT_MS: '5000' })));
    sut = inboundPipeline(app);
    await registerSender(world, org, pnid);
    await setLimits(world, org, {});
    held = new pg.Client({ connectionString: TEST_DATABASE_URL });
    await held.connect();
  }, 90_000);
  afterAll(async () => {
    await held?.end();
    await world.close();
  });

  const stored = async (wamid: string) => (await world.sql(`SELECT 1 FROM "${m()}".messages WHERE external_id = $1`, [wamid])).length;

  it('admits the message when the abuse service says no block is in force, although the event-fed copy still shows one', async () => {
    const from = '5511960005555';
    const first = newWamid();
    expect(await sut.whatsapp(inboundText(first, from, 'first', ts++, pnid))).toMatchObject({ stored: 1 });
    const [{ contact_id, conversation_id }] = await world.sql<{ contact_id: string; conversation_id: string }>(`SELECT contact_id, conversation_id FROM "${m()}".messages WHERE external_id = $1`, [first]);
    // Messaging's copy shows a block the abuse service does not have (in force there: nothing),
    // as when the block's end has not reached messaging yet.
    await restrictInReadModel(world, { organization_id: org, contact_id, conversation_id }, 'block', 7 * 86_400_000);

    await held.query('BEGIN');
    try {
      await held.query(`SELECT 1 FROM "${world.schema('abuse')}".rate_counters WHERE conversation_id = $1 FOR UPDATE`, [conversation_id]);
      const wamid = newWamid();
      expect(await sut.whatsapp(inboundText(wamid, from, 'hello again', ts++, pnid))).toMatchObject({ stored: 1, denied: 0 });
      expect(await stored(wamid)).toBe(1);
    } finally {
      await held.query('ROLLBACK');
    }
  });
});
