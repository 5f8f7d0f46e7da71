import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import { randomUUID } from 'node:crypto';
import { MessagingEvents } from '@touchpoint/contracts';
import { anActiveFlow, aWaitingFlow, createTestWorld, eventually, publishEvent, type TestWorld } from '@touchpoint/testing';
import { FixedClock } from '@touchpoint/time';
import { BulkJobsService } from '../../apps/followups/src/bulk/bulk-jobs.service.js';
import { EnrollmentsService } from '../../apps/followups/src/enrollments/enrollments.service.js';
import { FlowsService } from '../../apps/followups/src/flows/flows.service.js';
import { SettingsService } from '../../apps/followups/src/settings/settings.service.js';
import { gatewayStartOptions } from '../../apps/gateway/src/gateway.app.js';
import { GatewayConfig } from '../../apps/gateway/src/gateway.config.js';
import { GatewayModule } from '../../apps/gateway/src/gateway.module.js';
import { gatewayBuilders, httpClient, type SeededKey } from '../gateway/gateway-world.js';
import { startFollowups } from './followups-world.js';

type Row = Record<string, unknown>;

const LEASE_MS = 5000;
const MAX_ATTEMPTS = 3;

/**
 * Bulk enrollment jobs: a list or a frozen segment, enrolled in chunks under a lease with a cursor;
 * a worker killed halfway leaves the job to another that resumes at the cursor without enrolling
 * anyone twice; rejections counted by reason; the plan limit enforced; progress over REST.
 */
describe('Follow-up bulk enrollment jobs', () => {
  let world: TestWorld;
  let followups: NestFastifyApplication;
  let http: ReturnType<typeof httpClient>;
  let jobs: BulkJobsService;
  let admin: SeededKey;
  let org: string;
  let schema: string;
  let flowId: string;
  const clock = new FixedClock(new Date('2026-10-06T13:00:00Z'));

  beforeAll(async () => {
    world = await createTestWorld('fu_bulk');
    followups = await startFollowups(world, { clock, env: { FOLLOWUP_BULK_CHUNK: '10', FOLLOWUP_BULK_LEASE_MS: String(LEASE_MS), FOLLOWUP_BULK_MAX_ATTEMPTS: String(MAX_ATTEMPTS) } });
    const config = world.config(GatewayConfig);
    const gateway = await world.start(GatewayModule.forRoot(config), gatewayStartOptions(config));
    http = httpClient(await gateway.getUrl());
    admin = await gatewayBuilders(gateway).organizationWithKey({ scopes: ['agents:read', 'agents:write'] });
    org = admin.organizationId;
    jobs = followups.get(BulkJobsService);
    schema = world.schema('followups');
    const flows = followups.get(FlowsService);
    flowId = await anActiveFlow(flows, org, { name: 'bulk', ...aWaitingFlow({ kind: 'manual', cancel_on_reply: false }) });
  });
  afterAll(() => world.close());

  const sql = <T = Row>(text: string, params?: unknown[]) => world.sql<T>(text.replaceAll('fu.', `"${schema}".`), params);
  const create = (json: object) => http('POST', '/ai/followups/bulk-enrollments', { secret: admin.secret, json: { customer_id: org, flow_id: flowId, operation_key: randomUUID(), ...json } });
  const progress = async (id: string) => (await http('GET', `/ai/followups/bulk-enrollments/${id}?customer_id=${org}`, { secret: admin.secret })).body.data;

  /** Contacts known to followups (messaging's contact events), with tags. */
  async function contacts(n: number, tags: string[] = []): Promise<string[]> {
    const ids = Array.from({ length: n }, () => randomUUID());
    for (const id of ids) await publishEvent(world, MessagingEvents.ContactCreated, org, { contact_id: id, kind: 'crm', phone: null, tags });
    await eventually(async () => (await sql(`SELECT count(*)::int AS n FROM fu.contacts WHERE contact_id = ANY($1::uuid[])`, [ids]))[0].n === n);
    return ids;
  }

  it('a job killed halfway resumes at its cursor under a new lease, enrolling nobody twice; rejections counted by reason; progress over REST', async () => {
    const ids = await contacts(35);
    // One already in the flow, one opted out.
    await followups.get(EnrollmentsService).create({ organization_id: org, flow_id: flowId, contact_id: ids[3]!, operation_key: randomUUID() });
    await publishEvent(world, MessagingEvents.ContactOptedOut, org, { contact_id: ids[30], channel: 'whatsapp', message_id: null });
    await eventually(async () => (await sql(`SELECT opted_out_at FROM fu.contacts WHERE contact_id = $1`, [ids[30]]))[0].opted_out_at !== null);

    const created = await create({ contact_ids: [...ids, ids[0]] });
    expect(created.status).toBe(201);
    expect(created.body.data).toMatchObject({ status: 'pending', source: 'list', total: 35, processed: 0, enrolled: 0, rejected: {} });
    const jobId = created.body.data.id;

    // Worker A takes the job, does two chunks, then dies (never touches it again).
    const leaseA = (await jobs.claim())!;
    expect(leaseA.jobId).toBe(jobId);
    expect(await jobs.runChunk(leaseA)).toBe('more');
    expect(await jobs.runChunk(leaseA)).toBe('more');
    expect(await progress(jobId)).toMatchObject({ status: 'running', processed: 20, enrolled: 19, rejected: { already_enrolled: 1 } });

    // Its lease holds the job until it runs out.
    expect(await jobs.claim()).toBeUndefined();
    clock.advance(LEASE_MS + 1);
    const leaseB = (await jobs.claim())!;
    expect(leaseB.jobId).toBe(jobId);
    // A zombie A is fenced out by the new lease token.
    expect(await jobs.runChunk(leaseA)).toBe('lost');
    while ((await jobs.runChunk(leaseB)) === 'more');

    const done = await progress(jobId);
    expect(done).toMatchObject({ status: 'completed', total: 35, processed: 35, enrolled: 33, rejected: { already_enrolled: 1, opted_out: 1 } });
    expect(done.finished_at).not.toBeNull();
    const enrolled = await sql(`SELECT contact_id, count(*)::int AS n FROM fu.enrollments WHERE flow_id = $1 AND contact_id = ANY($2::uuid[]) GROUP BY contact_id`, [flowId, ids]);
    expect(enrolled).toHaveLength(34);
    expect(enrolled.every((r) => r.n === 1)).toBe(true);
    expect((await sql(`SELECT count(*)::int AS n FROM fu.enrollments WHERE operation_key LIKE $1`, [`bulk:${jobId}:%`]))[0].n).toBe(33);
    expect(await jobs.claim()).toBeUndefined();
  });

  it('freezes a segment at creation: a contact matching it later is not enrolled', async () => {
    const tag = `lote_${randomUUID().slice(0, 6)}`;
    const ids = await contacts(12, [tag]);
    await contacts(3, ['outro']);
    const created = await create({ segment: { match: 'all', rules: [{ field: 'contact.tags', op: 'contains', value: tag }] } });
    expect(created.body.data).toMatchObject({ source: 'segment', total: 12 });
    const [late] = await contacts(1, [tag]);
    expect(await jobs.runOne()).toBe(true);
    expect(await progress(created.body.data.id)).toMatchObject({ status: 'completed', enrolled: 12 });
    expect((await sql(`SELECT contact_id FROM fu.enrollments WHERE operation_key LIKE $1`, [`bulk:${created.body.data.id}:%`])).map((r) => r.contact_id).sort()).toEqual([...ids].sort());
    expect(await sql(`SELECT 1 FROM fu.enrollments WHERE contact_id = $1`, [late])).toEqual([]);

    expect((await create({ segment: { match: 'all', rules: [{ field: 'contact.tags', op: 'gt', value: 1 }] } })).status).toBe(400);
    expect((await create({})).status).toBe(400);
  });

  it('a job whose chunk keeps failing ends failed after FOLLOWUP_BULK_MAX_ATTEMPTS claims, with the error recorded; a chunk that goes through resets the count', async () => {
    const ids = await contacts(15);
    const poison = ids[12]!;
    // A real fault in the database: inserting this contact's enrollment raises (not a business rejection).
    await sql(`CREATE FUNCTION fu.poison_enrollment() RETURNS trigger LANGUAGE plpgsql AS $$
                 BEGIN IF NEW.contact_id = '${poison}' THEN RAISE EXCEPTION 'disk on fire for %', NEW.contact_id; END IF; RETURN NEW; END $$`);
    await sql(`CREATE TRIGGER poison_enrollment BEFORE INSERT ON fu.enrollments FOR EACH ROW EXECUTE FUNCTION fu.poison_enrollment()`);
    try {
      const created = await create({ contact_ids: ids });
      const jobId = created.body.data.id;
      // First claim: chunk 1 (10 contacts) goes through, chunk 2 holds the poison and throws.
      expect(await jobs.runOne()).toBe(true);
      expect(await progress(jobId)).toMatchObject({ status: 'running', processed: 10, enrolled: 10, attempts: 1, last_error: expect.stringContaining('disk on fire') });
      for (let attempt = 2; attempt <= MAX_ATTEMPTS; attempt++) {
        expect(await jobs.runOne()).toBe(false); // the failed attempt's lease still holds the job
        clock.advance(LEASE_MS + 1);
        expect(await jobs.runOne()).toBe(true);
      }
      const failed = await progress(jobId);
      expect(failed).toMatchObject({ status: 'failed', processed: 10, enrolled: 10, attempts: MAX_ATTEMPTS, last_error: expect.stringContaining('disk on fire') });
      expect(failed.finished_at).not.toBeNull();
      // Never claimed again.
      clock.advance(LEASE_MS + 1);
      expect(await jobs.claim()).toBeUndefined();
      expect((await sql(`SELECT count(*)::int AS n FROM fu.enrollments WHERE operation_key LIKE $1`, [`bulk:${jobId}:%`]))[0].n).toBe(10);
    } finally {
      await sql(`DROP TRIGGER poison_enrollment ON fu.enrollments`);
      await sql(`DROP FUNCTION fu.poison_enrollment()`);
    }
  });

  it('a job whose worker dies mid-chunk every time ends failed too, saying it was given up', async () => {
    const created = await create({ contact_ids: await contacts(3) });
    const jobId = created.body.data.id;
    for (let attempt = 1; attempt <= MAX_ATTEMPTS; attempt++) {
      expect((await jobs.claim())?.jobId).toBe(jobId); // …and the worker dies before its chunk commits
      clock.advance(LEASE_MS + 1);
    }
    expect(await jobs.claim()).toBeUndefined();
    expect(await progress(jobId)).toMatchObject({ status: 'failed', processed: 0, attempts: MAX_ATTEMPTS + 1, last_error: `gave up after ${MAX_ATTEMPTS} attempts without a chunk going through` });
  });

  it('enforces the plan limit of live enrollments', async () => {
    const live = (await sql<{ n: number }>(`SELECT count(*)::int AS n FROM fu.enrollments WHERE organization_id = $1 AND status IN ('active', 'waiting_reply', 'dormente', 'paused_handoff', 'paused_manual')`, [org]))[0].n;
    const settings = followups.get(SettingsService);
    const current = await settings.get(org);
    await settings.update({ organization_id: org, expected_revision: current.revision, max_live_enrollments: live + 3 });
    const created = await create({ contact_ids: await contacts(10) });
    expect(await jobs.runOne()).toBe(true);
    expect(await progress(created.body.data.id)).toMatchObject({ status: 'completed', enrolled: 3, rejected: { plan_limit: 7 } });
  });
});
