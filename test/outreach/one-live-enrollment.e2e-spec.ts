import { randomUUID } from 'node:crypto';
import type { QueryRunner } from 'typeorm';
import { type CampaignView, type ContactView, MessagingRpc } from '@touchpoint/contracts';
import type { Tx } from '@touchpoint/database';
import { UnitOfWork } from '@touchpoint/runtime';
import { EnrollmentsRepository } from '../../apps/outreach/src/enrollments/enrollments.repository.js';
import { EnrollmentsService } from '../../apps/outreach/src/enrollments/enrollments.service.js';
import { OneLiveEnrollmentPerPersonId1764800000014 } from '../../apps/outreach/src/migrations/1764800000014-OneLiveEnrollmentPerPersonId.js';
import { outreachBuilders } from './builders.js';
import { type OutreachWorld, startOutreachWorld } from './outreach-world.js';

/**
 * One live outreach enrollment per person id across every campaign (seed 003 §4.1 check 4, §5): a
 * prospect promoted to a CRM person keeps its contact id, and must not run in a second campaign.
 */
describe('one live enrollment per person', () => {
  let w: OutreachWorld;
  let b: ReturnType<typeof outreachBuilders>;
  let uow: UnitOfWork;
  let org: string;
  let secret: string;

  beforeAll(async () => {
    w = await startOutreachWorld('outreach_one_live', { gateway: true, outreachEnv: { OUTREACH_RUNNER_ENABLED: 'false' } });
    b = outreachBuilders(w);
    uow = w.outreach.get(UnitOfWork);
    const seeded = await w.builders!.organizationWithKey({ scopes: ['outreach:read', 'outreach:write'] });
    org = seeded.organizationId;
    secret = seeded.secret;
  });
  afterAll(() => w.close());

  const campaign = (name = `Campaign ${randomUUID().slice(0, 6)}`): Promise<CampaignView> => b.campaign(org, { name });
  const enroll = (campaignId: string, person: ContactView, kind = person.kind) => w.http!('POST', `/agentic/outreach/campaigns/${campaignId}/enrollments`, { secret, json: { person_kind: kind, person_id: person.id } });
  const liveOf = (personId: string) => w.sql(`SELECT * FROM {o}.enrollments WHERE organization_id = $1 AND person_id = $2 AND status IN ('active', 'needs_contact_data')`, [org, personId]);
  const promoteContact = (person: ContactView) => w.rpc.call('messaging', MessagingRpc.ContactUpdate, { organization_id: org, contact_id: person.id, kind: 'crm' });

  describe('enroll', () => {
    it('answers 409 already_enrolled with the live enrollment when a promoted prospect is enrolled again as a CRM person', async () => {
      const first = await campaign('Spring push');
      const second = await campaign();
      const person = await w.contact(org);
      const enrolled = await enroll(first.id, person);
      expect(enrolled.status).toBe(201);
      await promoteContact(person);

      const again = await enroll(second.id, person, 'crm');

      expect(again.status).toBe(409);
      expect(again.body.error).toMatchObject({
        code: 'already_enrolled',
        details: { enrollment_id: enrolled.body.id, campaign_id: first.id, campaign_name: 'Spring push', campaign_status: 'active' },
      });
      expect((await liveOf(person.id)).map((e) => e.id)).toEqual([enrolled.body.id]);
    });

    it('lets exactly one of four campaigns enrolling the same person at once win; the others answer already_enrolled naming it', async () => {
      const campaigns = await Promise.all([campaign(), campaign(), campaign(), campaign()]);
      const person = await w.contact(org);

      const answers = await Promise.all(campaigns.map((c) => enroll(c.id, person)));

      const won = answers.filter((a) => a.status === 201);
      expect(won).toHaveLength(1);
      const refused = answers.filter((a) => a.status !== 201);
      expect(refused.map((a) => [a.status, a.body.error.code])).toEqual([
        [409, 'already_enrolled'],
        [409, 'already_enrolled'],
        [409, 'already_enrolled'],
      ]);
      for (const a of refused) expect(a.body.error.details.enrollment_id).toBe(won[0]!.body.id);
      expect(await liveOf(person.id)).toHaveLength(1);
    });

    it('lets the database refuse the second of two concurrent inserts of one person id, whatever kind each names', async () => {
      const repo = w.outreach.get(EnrollmentsRepository);
      const [x, y] = await Promise.all([campaign(), campaign()]);
      const personId = (await w.contact(org)).id;
      const row = (campaignId: string, kind: 'crm' | 'prospect') => ({ organization_id: org, campaign_id: campaignId, person_kind: kind, person_id: personId, next_check_at: new Date(), now: new Date() });
      let release!: () => void;
      const held = new Promise<void>((resolve) => (release = resolve));
      let written!: () => void;
      const firstWritten = new Promise<void>((resolve) => (written = resolve));

      // The first insert stays uncommitted while the second one runs into it.
      const first = uow.run(async (tx) => {
        const inserted = await repo.insertLive(tx, row(x.id, 'prospect'));
        written();
        await held;
        return inserted;
      });
      await firstWritten;
      const second = uow.run((tx) => repo.insertLive(tx, row(y.id, 'crm')));
      await waitForLockWaitOr(second);
      release();

      const [a, c] = await Promise.all([first, second]);
      expect(a).not.toBeNull();
      expect(c).toBeNull();
      expect((await liveOf(personId)).map((e) => e.campaign_id)).toEqual([x.id]);
    });
  });

  describe('promote', () => {
    /** Two live enrollments of two contacts, as when a prospect record and a separate CRM record name one person. */
    const pair = async () => {
      const [prospectCampaign, crmCampaign] = await Promise.all([campaign(), campaign()]);
      const prospect = await b.enrollment(org, prospectCampaign.id);
      const crm = await b.enrollment(org, crmCampaign.id, { kind: 'crm' });
      const pending = await b.pendingAction(org, crm.enrollmentId);
      return { prospect, crm, pending };
    };
    const promote = (enrollmentId: string, crmPersonId: string, cause: 'reply' | 'user') => uow.run((tx: Tx) => w.outreach.get(EnrollmentsService).promote(tx, enrollmentId, crmPersonId, cause));

    it('on a reply, moves the replied enrollment to the CRM person and ends the other live one duplicate, invalidating its draft', async () => {
      const { prospect, crm, pending } = await pair();

      const ended = await promote(prospect.enrollmentId, crm.person.id, 'reply');

      expect(ended).toBe(crm.enrollmentId);
      expect(await b.enrollmentRow(crm.enrollmentId)).toMatchObject({ status: 'ended', ended_reason: 'duplicate', next_check_at: null });
      expect(await b.action(pending.actionId)).toMatchObject({ status: 'invalidated', invalidated_reason: 'duplicate' });
      expect(await b.enrollmentRow(prospect.enrollmentId)).toMatchObject({ status: 'active', person_kind: 'crm', person_id: crm.person.id });
      expect((await liveOf(crm.person.id)).map((e) => e.id)).toEqual([prospect.enrollmentId]);
    });

    it('on a promotion by the user, ends the moved enrollment duplicate and leaves the CRM person where they are live', async () => {
      const { prospect, crm, pending } = await pair();

      const ended = await promote(prospect.enrollmentId, crm.person.id, 'user');

      expect(ended).toBe(prospect.enrollmentId);
      expect(await b.enrollmentRow(prospect.enrollmentId)).toMatchObject({ status: 'ended', ended_reason: 'duplicate', person_kind: 'prospect' });
      expect(await b.enrollmentRow(crm.enrollmentId)).toMatchObject({ status: 'active' });
      expect((await b.action(pending.actionId)).status).toBe('pending_approval');
    });

    it('moves a promoted prospect that keeps its id to kind crm and ends nothing', async () => {
      const c = await campaign();
      const { enrollmentId, person } = await b.enrollment(org, c.id);

      expect(await promote(enrollmentId, person.id, 'reply')).toBeNull();
      expect(await b.enrollmentRow(enrollmentId)).toMatchObject({ status: 'active', person_kind: 'crm', person_id: person.id });
    });
  });

  describe(OneLiveEnrollmentPerPersonId1764800000014.name, () => {
    it('settles live rows that already share a person id (the replied one stays, the others end duplicate) and its down restores the per-kind index', async () => {
      const migration = new OneLiveEnrollmentPerPersonId1764800000014();
      const run = (step: 'up' | 'down') => uow.run((tx) => migration[step]({ query: (text: string, params?: unknown[]) => tx.query(text, params) } as unknown as QueryRunner));
      await run('down');
      try {
        // What the per-kind index let through: one person id live as a prospect and as a CRM person.
        const [first, second] = await Promise.all([campaign(), campaign()]);
        const personId = (await w.contact(org)).id;
        const insert = async (campaignId: string, kind: string) =>
          (await w.sql(`INSERT INTO {o}.enrollments (organization_id, campaign_id, person_kind, person_id, status, created_at, updated_at) VALUES ($1, $2, $3, $4, 'active', now(), now()) RETURNING id`, [org, campaignId, kind, personId]))[0]!.id as string;
        const crmRow = await insert(first.id, 'crm');
        const repliedRow = await insert(second.id, 'prospect');
        await w.sql(
          `INSERT INTO {o}.decisions (organization_id, enrollment_id, trigger_event_id, trigger_reason, context_version, outcome, created_at, updated_at)
           VALUES ($1, $2, $3, 'reply_received', 1, 'saved', now(), now())`,
          [org, repliedRow, `reply:${randomUUID()}`],
        );
        const pending = await b.pendingAction(org, crmRow);

        await run('up');

        expect(await b.enrollmentRow(crmRow)).toMatchObject({ status: 'ended', ended_reason: 'duplicate' });
        expect(await b.action(pending.actionId)).toMatchObject({ status: 'invalidated', invalidated_reason: 'duplicate' });
        expect((await liveOf(personId)).map((e) => e.id)).toEqual([repliedRow]);
        await expect(w.sql(`INSERT INTO {o}.enrollments (organization_id, campaign_id, person_kind, person_id, status, created_at, updated_at) VALUES ($1, $2, 'crm', $3, 'active', now(), now())`, [org, first.id, personId])).rejects.toThrow(/enrollments_one_live_per_person/);
      } finally {
        const [index] = await w.sql(`SELECT indexdef FROM pg_indexes WHERE schemaname = $1 AND indexname = 'enrollments_one_live_per_person'`, [w.schema]);
        if (String(index?.indexdef).includes('person_kind')) await run('up');
      }
    });
  });

  /** Until a session of this database waits on a lock behind an enrollment insert, or `done` settles (it did not wait). */
  async function waitForLockWaitOr(done: Promise<unknown>): Promise<void> {
    let settled = false;
    void done.then(
      () => (settled = true),
      () => (settled = true),
    );
    for (let i = 0; i < 400 && !settled; i++) {
      const rows = await w.sql(`SELECT 1 FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE 'INSERT INTO enrollments%'`);
      if (rows.length) return;
      await new Promise((r) => setTimeout(r, 25));
    }
  }
});
