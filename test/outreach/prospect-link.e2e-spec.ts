import { randomUUID } from 'node:crypto';
import { type EnrollBatchResult, MessagingRpc, OutreachRpc } from '@touchpoint/contracts';
import { AppError } from '@touchpoint/errors';
import { eventually } from '@touchpoint/testing';
import { EnrollmentsService } from '../../apps/outreach/src/enrollments/enrollments.service.js';
import { outreachBuilders } from './builders.js';
import { type OutreachWorld, startOutreachWorld } from './outreach-world.js';

/**
 * A prospect with a CRM link (seed 003 §4.1): it enrolls as the CRM person, and a link saved while
 * it is enrolled is a promotion, whose enrollment ends `duplicate` when the CRM person is already
 * live elsewhere (one live enrollment per person, the partial unique index).
 */
describe(`${EnrollmentsService.name}: prospects linked to a CRM person`, () => {
  let w: OutreachWorld;
  let b: ReturnType<typeof outreachBuilders>;
  const org = `org-${randomUUID()}`;

  beforeAll(async () => {
    w = await startOutreachWorld('outreach_prospect_link', { outreachEnv: { OUTREACH_RUNNER_ENABLED: 'false', OUTREACH_SWEEP_INTERVAL_MS: '0' } });
    b = outreachBuilders(w);
  });
  afterAll(() => w.close());

  const crm = () => w.contact(org, { kind: 'crm', name: 'Sarah Lee (CRM)' });
  const link = (prospectId: string, crmId: string | null) => w.rpc.call('messaging', MessagingRpc.ContactUpdate, { organization_id: org, contact_id: prospectId, linked_contact_id: crmId });
  const enroll = async (campaignId: string, kind: string, personId: string) => (await w.rpc.callUnchecked<EnrollBatchResult>('outreach', OutreachRpc.EnrollBatch, { organization_id: org, campaign_id: campaignId, people: [{ person_kind: kind, person_id: personId }] })).results[0]!;

  it('enrolls a linked prospect as its CRM person; a second enrollment of the prospect answers already_enrolled', async () => {
    const person = await crm();
    const prospect = await w.contact(org);
    await link(prospect.id, person.id);
    const campaign = await b.campaign(org);
    const result = await enroll(campaign.id, 'prospect', prospect.id);
    expect(result).toMatchObject({ result: 'added', existing: false });
    const row = await b.enrollmentRow((result as { enrollment_id: string }).enrollment_id);
    expect(row).toMatchObject({ person_kind: 'crm', person_id: person.id, status: 'active' });
    const other = await b.campaign(org);
    expect(await enroll(other.id, 'prospect', prospect.id)).toMatchObject({ result: 'already_enrolled', campaign_id: campaign.id });
  });

  it('a link saved while the prospect is enrolled moves the enrollment to the CRM person', async () => {
    const campaign = await b.campaign(org);
    const { enrollmentId, person: prospect } = await b.enrollment(org, campaign.id);
    const person = await crm();
    await link(prospect.id, person.id);
    const moved = await eventually(async () => {
      const row = await b.enrollmentRow(enrollmentId);
      return row.person_kind === 'crm' ? row : null;
    }, 20_000);
    expect(moved).toMatchObject({ person_id: person.id, status: 'active' });
  });

  it('a link to a CRM person live in another campaign ends the moved enrollment duplicate, and its draft is invalidated; the other stays', async () => {
    const first = await b.campaign(org);
    const person = await crm();
    const kept = await enroll(first.id, 'crm', person.id);
    const second = await b.campaign(org);
    const { enrollmentId, person: prospect } = await b.enrollment(org, second.id);
    const { actionId } = await b.pendingAction(org, enrollmentId);
    await link(prospect.id, person.id);
    const ended = await eventually(async () => {
      const row = await b.enrollmentRow(enrollmentId);
      return row.status === 'ended' ? row : null;
    }, 20_000);
    expect(ended).toMatchObject({ ended_reason: 'duplicate', person_kind: 'prospect' });
    expect(await b.action(actionId)).toMatchObject({ status: 'invalidated', invalidated_reason: 'duplicate' });
    expect(await b.enrollmentRow((kept as { enrollment_id: string }).enrollment_id)).toMatchObject({ status: 'active', person_id: person.id });
  });

  it('refuses a link that is not from a prospect to a CRM contact (validation_failed)', async () => {
    const person = await crm();
    const prospect = await w.contact(org);
    const another = await w.contact(org);
    for (const [from, to] of [
      [prospect.id, another.id],
      [person.id, (await crm()).id],
      [prospect.id, prospect.id],
      [prospect.id, randomUUID()],
    ]) {
      const err = (await link(from!, to!).catch((e: unknown) => e)) as AppError;
      expect(err).toBeInstanceOf(AppError);
      expect(err.code).toBe('validation_failed');
    }
    const view = await w.rpc.callUnchecked<{ linked_contact_id: string | null }>('messaging', MessagingRpc.ContactGet, { organization_id: org, contact_id: prospect.id });
    expect(view.linked_contact_id).toBeNull();
  });
});
