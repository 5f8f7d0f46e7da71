import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import { randomUUID } from 'node:crypto';
import { DateTime } from 'luxon';
import { type ActionView, type ContactView, OutreachRpc, type TimelineItem } from '@touchpoint/contracts';
import { RpcClient } from '@touchpoint/runtime';
import { aConnectedMailbox, anEnrollment, aPendingDraft, createCampaign, createTestWorld, eventually, type TestWorld, untilServicesAnswer } from '@touchpoint/testing';
import { ApiKeysModule } from '../../apps/gateway/src/api-keys/api-keys.module.js';
import { gatewayStartOptions } from '../../apps/gateway/src/gateway.app.js';
import { GatewayConfig } from '../../apps/gateway/src/gateway.config.js';
import { GatewayModule } from '../../apps/gateway/src/gateway.module.js';
import { OrganizationsModule } from '../../apps/gateway/src/organizations/organizations.module.js';
import { OutreachRoutesModule } from '../../apps/gateway/src/outreach/outreach.module.js';
import { NylasWebhookModule } from '../../apps/gateway/src/webhooks/nylas/nylas-webhook.module.js';
import { gatewayBuilders, httpClient } from '../gateway/gateway-world.js';
import { SandboxHandle } from '../outbox/harness.js';
import { startOutreachToSandbox } from './outreach-world.js';

type Row = Record<string, unknown>;
const DAY = 86_400_000;

/**
 * Out-of-office auto-resume, black-box: the sandbox's Nylas fires a signed webhook at the gateway,
 * messaging stores and judges the auto-reply, and outreach moves the enrollment's next check to the
 * day after the return date the message states (bounded to [now + followup_min_days, now + 30
 * days]), visible on the timeline through the gateway's REST route. An auto-reply still starts no
 * decision and changes no version (seed 003 §4.7).
 */
describe('out-of-office auto-resume', () => {
  let world: TestWorld;
  let sandbox: SandboxHandle;
  let outreach: NestFastifyApplication;
  let rpc: RpcClient;
  let http: ReturnType<typeof httpClient>;
  let org: string;
  let secret: string;
  const grant = `grant-ooo-${randomUUID()}`;
  let senderId: string;

  beforeAll(async () => {
    world = await createTestWorld('outreach_ooo');
    sandbox = await SandboxHandle.start();
    outreach = await startOutreachToSandbox(world, sandbox);
    rpc = outreach.get(RpcClient);
    const gatewayConfig = world.config(GatewayConfig, { NYLAS_WEBHOOK_SECRET: 'e2e-nylas-secret' });
    const gateway = await world.start(GatewayModule.forRoot(gatewayConfig, [NylasWebhookModule, OrganizationsModule, ApiKeysModule, OutreachRoutesModule]), gatewayStartOptions(gatewayConfig));
    const url = (await gateway.getUrl()).replace('[::1]', '127.0.0.1');
    http = httpClient(url);
    await sandbox.post('/sandbox/nylas/settings', { webhook_url: `${url}/webhooks/nylas`, webhook_secret: 'e2e-nylas-secret' });
    await untilServicesAnswer(rpc, ['messaging', 'outbox-dispatcher', 'ai-gateway', 'outreach']);
    const seeded = await gatewayBuilders(gateway).organizationWithKey({ scopes: ['outreach:read', 'outreach:write'] });
    org = seeded.organizationId;
    secret = seeded.secret;
    ({ senderId } = await aConnectedMailbox(rpc, sandbox, org, { grant }));
  }, 120_000);
  afterAll(async () => {
    await world.close();
    await sandbox.close();
  });

  const o = () => world.schema('outreach');
  const m = () => world.schema('messaging');
  const enrollment = async (id: string) => (await world.sql<Row & { next_check_at: Date }>(`SELECT * FROM "${o()}".enrollments WHERE id = $1`, [id]))[0]!;
  const action = async (id: string) => (await world.sql<Row>(`SELECT * FROM "${o()}".proposed_actions WHERE id = $1`, [id]))[0]!;

  /** A person enrolled (contact time zone `timeZone`), whose first email went out after approval. */
  async function emailed(timeZone: string, followupMinDays = 2) {
    const campaign = await createCampaign(rpc, org, { followup_min_days: followupMinDays, followup_max_days: Math.max(5, followupMinDays), email_sender_id: senderId });
    const { enrollmentId, person } = await anEnrollment(rpc, org, campaign.id, { time_zone: timeZone });
    const pending = await aPendingDraft(world, enrollmentId);
    await rpc.callUnchecked<ActionView>('outreach', OutreachRpc.ActionApprove, { organization_id: org, action_id: pending!.id, actor: { member_id: 'member-1' } });
    const sent = await eventually(async () => ((await action(pending!.id)).status === 'executed' ? action(pending!.id) : null), 30_000);
    const before = await eventually(async () => {
      const row = await enrollment(enrollmentId);
      return row.next_check_at ? row : null;
    }, 30_000);
    return { person, enrollmentId, sentId: sent.provider_message_id as string, before };
  }

  /** The person's mailbox answers with an auto-reply; resolves once outreach consumed messaging's event. */
  async function autoReply(person: ContactView, inReplyTo: string, body: string) {
    const posted = await sandbox.post<{ message: { id: string }; deliveries: { status: number }[] }>('/sandbox/nylas/inbound', {
      grant_id: grant,
      from: person.email,
      reply_to_message_id: inReplyTo,
      subject: 'Automatic reply: your note',
      body,
      headers: [{ name: 'Auto-Submitted', value: 'auto-replied' }],
    });
    expect(posted.deliveries.map((d) => d.status)).toEqual([200]);
    const [row] = await world.sql<Row>(`SELECT id, auto_reply FROM "${m()}".messages WHERE external_id = $1`, [posted.message.id]);
    expect(row!.auto_reply).toBe(true);
    await eventually(async () => (await world.sql(`SELECT 1 FROM "${o()}".inbox_events WHERE event_id = $1`, [`messaging.message.received:${row!.id}`]))[0], 30_000);
    return row!.id as string;
  }

  const timeline = async (enrollmentId: string) => {
    const res = await http('GET', `/agentic/outreach/enrollments/${enrollmentId}/timeline`, { secret });
    expect(res.status).toBe(200);
    return res.body.items as TimelineItem[];
  };
  const replyEvents = (enrollmentId: string) => world.sql<Row>(`SELECT event_id FROM "${o()}".outbox_events WHERE event_id LIKE 'reply:%' AND payload->'data'->>'enrollment_id' = $1`, [enrollmentId]);

  it("moves next_check_at to the start of the day after the stated return date, in the contact's zone, and shows it on the timeline", async () => {
    const s = await emailed('America/Sao_Paulo');
    // A return date ten days out, written the Portuguese way (day first): inside both bounds.
    const back = DateTime.now().setZone('America/Sao_Paulo').plus({ days: 10 });
    const messageId = await autoReply(s.person, s.sentId, `Olá! Estou de férias, de volta em ${back.toFormat('dd/MM')}. Abraços.`);

    const expected = back.plus({ days: 1 }).startOf('day').toJSDate().getTime();
    const after = await eventually(async () => {
      const row = await enrollment(s.enrollmentId);
      return new Date(row.next_check_at).getTime() === expected ? row : null;
    }, 30_000);
    // Still not a reply: no version bump, no decision event.
    expect(after).toMatchObject({ status: 'active', context_version: s.before.context_version });
    expect(await replyEvents(s.enrollmentId)).toEqual([]);

    const moved = (await timeline(s.enrollmentId)).find((i) => i.kind === 'next_check_moved');
    expect(moved).toMatchObject({
      data: { message_id: messageId, return_date: back.toISODate(), time_zone: 'America/Sao_Paulo', bounded: 'none', next_check_at: new Date(expected).toISOString(), previous_next_check_at: new Date(s.before.next_check_at).toISOString() },
    });
  }, 120_000);

  it('never moves it earlier than now + followup_min_days, nor later than 30 days', async () => {
    const soon = await emailed('Europe/Berlin', 4);
    const startedAt = Date.now();
    await autoReply(soon.person, soon.sentId, `Ich bin zurück am ${DateTime.now().setZone('Europe/Berlin').plus({ days: 1 }).toFormat('d.M.')} und beantworte dann Ihre Mail.`);
    const early = await eventually(async () => (await world.sql<Row>(`SELECT * FROM "${o()}".schedule_moves WHERE enrollment_id = $1`, [soon.enrollmentId]))[0] ?? null, 30_000);
    expect(early.bounded).toBe('min');
    const earlyAt = new Date((await enrollment(soon.enrollmentId)).next_check_at).getTime();
    expect(earlyAt).toBeGreaterThanOrEqual(startedAt + 4 * DAY);
    expect(earlyAt).toBeLessThanOrEqual(Date.now() + 4 * DAY);

    const late = await emailed('UTC');
    await autoReply(late.person, late.sentId, `I am on sabbatical and back on ${DateTime.now().setZone('UTC').plus({ days: 80 }).toFormat('d LLLL')}.`);
    const far = await eventually(async () => (await world.sql<Row>(`SELECT * FROM "${o()}".schedule_moves WHERE enrollment_id = $1`, [late.enrollmentId]))[0] ?? null, 30_000);
    expect(far.bounded).toBe('max');
    expect(new Date((await enrollment(late.enrollmentId)).next_check_at).getTime()).toBeLessThanOrEqual(Date.now() + 30 * DAY);
  }, 180_000);

  it('an auto-reply that states no date leaves the next check as it was', async () => {
    const s = await emailed('UTC');
    await autoReply(s.person, s.sentId, 'I am away with limited access to email.');
    const after = await enrollment(s.enrollmentId);
    expect(after.next_check_at).toEqual(s.before.next_check_at);
    expect(after.context_version).toBe(s.before.context_version);
    expect((await timeline(s.enrollmentId)).filter((i) => i.kind === 'next_check_moved')).toEqual([]);
  }, 120_000);
});
