import { createHash } from 'node:crypto';
import { OutreachRpc, type ReviewQueuePage } from '@touchpoint/contracts';
import { ReviewService } from '../../apps/outreach/src/review/review.service.js';
import { outreachBuilders } from './builders.js';
import { type OutreachWorld, startOutreachWorld } from './outreach-world.js';

/** Milliseconds of a Date, an ISO string or a timestamp column (Date.parse drops a Date's milliseconds). */
const ms = (value: unknown): number => new Date(value as string).getTime();

describe(ReviewService.name, () => {
  let w: OutreachWorld;
  let b: ReturnType<typeof outreachBuilders>;
  let org: string;
  let secret: string;
  let memberId: string;

  beforeAll(async () => {
    w = await startOutreachWorld('outreach_review', { gateway: true, outreachEnv: { OUTREACH_RUNNER_ENABLED: 'false' } });
    b = outreachBuilders(w);
  });
  afterAll(() => w.close());
  beforeEach(async () => {
    // A fresh organization per test keeps the queue and its total to what the test made.
    const seeded = await w.builders!.organizationWithKey({ scopes: ['outreach:read', 'outreach:write'] });
    org = seeded.organizationId;
    secret = seeded.secret;
    memberId = seeded.memberId;
  });

  const approve = (id: string, json: unknown = {}, headers: Record<string, string> = {}) => w.http!('POST', `/agentic/outreach/actions/${id}/approve`, { secret, json, headers });
  const reject = (id: string, json: unknown) => w.http!('POST', `/agentic/outreach/actions/${id}/reject`, { secret, json });
  const sha = (text: string) => createHash('sha256').update(text, 'utf8').digest('hex');

  describe('queue', () => {
    it('lists pending actions oldest first with everything the card needs, and the total', async () => {
      const c = await b.campaign(org, { name: 'Chairs Q3' });
      const first = await b.enrollment(org, c.id, { name: 'Sarah Lee', custom_fields: { company: 'Acme' } });
      const second = await b.enrollment(org, c.id, { name: 'Tom Park' });
      const a1 = await b.pendingAction(org, first.enrollmentId, { replyTo: { id: 'm-1', text: `Can you send pricing? ${'x'.repeat(600)}` } });
      const a2 = await b.pendingAction(org, second.enrollmentId, { type: 'linkedin_connection' });
      await w.rpc.call('messaging', 'messaging.contacts.update', { organization_id: org, contact_id: second.person.id, linkedin_url: 'https://www.linkedin.com/in/tom-park' });

      const res = await w.http!('GET', '/agentic/outreach/actions', { secret });
      const page = res.body as ReviewQueuePage;

      expect(page.total).toBe(2);
      expect(page.items.map((i) => i.id)).toEqual([a1.actionId, a2.actionId]);
      expect(page.items[0]).toMatchObject({
        type: 'email',
        person: { name: 'Sarah Lee', company: 'Acme', person_id: first.person.id },
        campaign: { campaign_id: c.id, name: 'Chairs Q3', status: 'active' },
        to: first.person.email,
        rationale: 'Fresh enrollment: no thread yet.',
        objective: 'Introduce the chairs and ask for a call.',
        draft: a1.draft,
      });
      // Cut to 500 code points, the last one the ellipsis, so the cut shows.
      expect(page.items[0]!.replying_to).toHaveLength(500);
      expect(page.items[0]!.replying_to).toBe(`Can you send pricing? ${'x'.repeat(477)}…`);
      expect(page.items[1]).toMatchObject({ type: 'linkedin_connection', to: 'https://www.linkedin.com/in/tom-park', replying_to: null });
      expect(page.items[0]!.age_seconds).toBeGreaterThanOrEqual(0);
    });

    it('shows only the new text of the reply under "Replying to": the quoted thread (our own email and its unsubscribe line) is stripped as in the context', async () => {
      const c = await b.campaign(org);
      const { enrollmentId } = await b.enrollment(org, c.id);
      const quoted = 'Yes, Tuesday at 10 works.\n\nOn Mon, 30 Nov 2026 at 09:00, Ana <ana@ours.example> wrote:\n> Hi Sarah, would a 20 minute call help?\n> Unsubscribe: https://touchpoint.example/u/abc';
      const { actionId } = await b.pendingAction(org, enrollmentId, { replyTo: { id: 'm-q', text: quoted } });
      const page = (await w.http!('GET', '/agentic/outreach/actions?limit=200', { secret })).body as ReviewQueuePage;
      expect(page.items.find((i) => i.id === actionId)!.replying_to).toBe('Yes, Tuesday at 10 works.');
    });
  });

  describe('approve', () => {
    it('freezes text + to under the SHA-256 of its canonical JSON, sets next_attempt_at and sends approved:{id}:{next_attempt_at}', async () => {
      const c = await b.campaign(org);
      const { enrollmentId, person } = await b.enrollment(org, c.id);
      const { actionId, draft } = await b.pendingAction(org, enrollmentId);

      const res = await approve(actionId);

      expect(res.status).toBe(200);
      const payload = { ...draft, to: person.email };
      expect(res.body).toMatchObject({ status: 'approved', approved_payload: payload, approved_by: expect.any(String) });
      expect(res.body.approved_hash).toBe(sha(`{"body":${JSON.stringify(draft.body)},"subject":${JSON.stringify(draft.subject)},"to":${JSON.stringify(person.email)}}`));
      const row = await b.action(actionId);
      expect(row.next_attempt_at).not.toBeNull();
      const event = await b.outboxEvent(`approved:${actionId}:${new Date(row.next_attempt_at).toISOString()}`);
      expect(event).toMatchObject({ type: 'outreach.action.approved', data: { action_id: actionId, enrollment_id: enrollmentId } });
    });

    it('answers 200 to a retry with the same text and 409 action_not_pending to a different one', async () => {
      const c = await b.campaign(org);
      const { enrollmentId } = await b.enrollment(org, c.id);
      const { actionId } = await b.pendingAction(org, enrollmentId);
      const edit = { payload: { subject: 'Chairs', body: 'Hi Sarah, a call?' } };

      const first = await approve(actionId, edit);
      const retry = await approve(actionId, edit);
      const other = await approve(actionId, { payload: { subject: 'Chairs', body: 'Something else' } });

      expect(first.status).toBe(200);
      expect(retry.status).toBe(200);
      expect(retry.body.approved_hash).toBe(first.body.approved_hash);
      expect([other.status, other.body.error.code]).toEqual([409, 'action_not_pending']);
      expect((await w.sql(`SELECT count(*)::int AS n FROM {o}.outbox_events WHERE type = 'outreach.action.approved' AND payload->'data'->>'action_id' = $1`, [actionId]))[0]!.n).toBe(1);
    });

    it('answers 422 with the draft check code for an edit that fails it, and the action stays pending', async () => {
      const c = await b.campaign(org);
      const { enrollmentId } = await b.enrollment(org, c.id);
      const { actionId } = await b.pendingAction(org, enrollmentId);

      const placeholder = await approve(actionId, { payload: { subject: 'Hi [First name]', body: 'b' } });
      const empty = await approve(actionId, { payload: { subject: 'S', body: ' ' } });

      expect([placeholder.status, placeholder.body.error.code, placeholder.body.error.details]).toEqual([422, 'draft_placeholder', { field: 'subject' }]);
      expect([empty.status, empty.body.error.code]).toEqual([422, 'draft_empty']);
      expect((await b.action(actionId)).status).toBe('pending_approval');
    });

    it('merges an edit over the draft: a subject alone keeps the body, a body alone keeps the subject, an emptied body is draft_empty', async () => {
      const c = await b.campaign(org);
      const { enrollmentId, person } = await b.enrollment(org, c.id);
      const { actionId, draft } = await b.pendingAction(org, enrollmentId);
      const second = await b.pendingAction(org, (await b.enrollment(org, c.id, { name: 'Tom Park' })).enrollmentId);

      const emptied = await approve(actionId, { payload: { subject: 'Edited', body: '' } });
      expect([emptied.status, emptied.body.error.code, emptied.body.error.details]).toEqual([422, 'draft_empty', { field: 'body' }]);
      const res = await approve(actionId, { payload: { subject: 'Edited' } });
      expect(res.status).toBe(200);
      expect(res.body.approved_payload).toEqual({ subject: 'Edited', body: draft.body, to: person.email });
      const bodyOnly = await approve(second.actionId, { payload: { body: 'Only the body changed.' } });
      expect(bodyOnly.body.approved_payload).toMatchObject({ subject: second.draft.subject, body: 'Only the body changed.' });
    });

    it('drops the subject of an edited reply (a reply has none) and keeps a LinkedIn note to its fields', async () => {
      const c = await b.campaign(org, { allowed_channels: ['email', 'linkedin'] });
      const { enrollmentId } = await b.enrollment(org, c.id, { linkedin_url: 'https://www.linkedin.com/in/sarah' });
      const { actionId } = await b.pendingAction(org, enrollmentId, { replyTo: { id: 'm-9', text: 'What does it cost?' }, draft: { body: 'It is 300 USD.' } });

      const res = await approve(actionId, { payload: { subject: 'ignored', body: 'It is 300 USD a seat.' } });
      expect(res.body.approved_payload).toEqual({ body: 'It is 300 USD a seat.', to: expect.any(String) });
    });

    it('refuses a key issued for support impersonation with 403 and changes nothing', async () => {
      const c = await b.campaign(org);
      const { enrollmentId } = await b.enrollment(org, c.id);
      const { actionId } = await b.pendingAction(org, enrollmentId);
      const support = await w.builders!.apiKeys.create({ organizationId: org, createdByMemberId: memberId, scopes: ['outreach:write'], name: 'support', impersonatedBy: 'support@touchpoint.example' });

      const res = await w.http!('POST', `/agentic/outreach/actions/${actionId}/approve`, { secret: support.secret, json: {} });
      const rej = await w.http!('POST', `/agentic/outreach/actions/${actionId}/reject`, { secret: support.secret, json: { then: 'stop' } });

      expect([res.status, res.body.error.code]).toEqual([403, 'forbidden']);
      expect(rej.status).toBe(403);
      expect((await b.action(actionId)).status).toBe('pending_approval');
    });

    it('records the member the key acts for as approved_by, whatever headers the request carries', async () => {
      const c = await b.campaign(org);
      const { enrollmentId } = await b.enrollment(org, c.id);
      const { actionId } = await b.pendingAction(org, enrollmentId);

      // The header that once marked an impersonated session is only a header now.
      const res = await approve(actionId, {}, { 'x-touchpoint-impersonator': 'support@touchpoint.example', 'x-touchpoint-member': 'someone-else' });

      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ status: 'approved', approved_by: memberId });
      expect((await b.action(actionId)).approved_by).toBe(memberId);
    });

    it('answers 403 to the key of a member who left, and approves nothing', async () => {
      const c = await b.campaign(org);
      const { enrollmentId } = await b.enrollment(org, c.id);
      const { actionId } = await b.pendingAction(org, enrollmentId);
      await w.builders!.members.update(org, memberId, { active: false });

      const res = await approve(actionId);

      expect([res.status, res.body.error.code]).toEqual([403, 'forbidden']);
      expect((await b.action(actionId)).status).toBe('pending_approval');
    });

    it('answers 409 campaign_not_active while paused, outreach_stopped while stopped, enrollment_not_active once ended', async () => {
      const c = await b.campaign(org);
      const { enrollmentId } = await b.enrollment(org, c.id);
      const { actionId } = await b.pendingAction(org, enrollmentId);

      await w.rpc.call('outreach', OutreachRpc.CampaignPause, { organization_id: org, campaign_id: c.id });
      expect((await approve(actionId)).body.error.code).toBe('campaign_not_active');
      await w.rpc.call('outreach', OutreachRpc.CampaignResume, { organization_id: org, campaign_id: c.id });
      await w.rpc.call('outreach', OutreachRpc.Stop, { organization_id: org });
      expect((await approve(actionId)).body.error.code).toBe('outreach_stopped');
      await w.rpc.call('outreach', OutreachRpc.Resume, { organization_id: org });
      await w.rpc.call('outreach', OutreachRpc.EnrollmentExit, { organization_id: org, enrollment_id: enrollmentId });
      const ended = await approve(actionId);
      expect([ended.status, ended.body.error.code]).toEqual([409, 'enrollment_not_active']);
    });

    it('answers 404 for an action of another organization', async () => {
      const c = await b.campaign(org);
      const { enrollmentId } = await b.enrollment(org, c.id);
      const { actionId } = await b.pendingAction(org, enrollmentId);
      const other = await w.builders!.organizationWithKey({ scopes: ['outreach:write'] });
      const res = await w.http!('POST', `/agentic/outreach/actions/${actionId}/approve`, { secret: other.secret, json: {} });
      expect(res.status).toBe(404);
    });
  });

  describe('reject', () => {
    it('regenerate needs a reason, then bumps the version, sets the event lease and asks for a decision once', async () => {
      const c = await b.campaign(org);
      const { enrollmentId } = await b.enrollment(org, c.id);
      const { actionId } = await b.pendingAction(org, enrollmentId);
      const before = await b.enrollmentRow(enrollmentId);

      const noReason = await reject(actionId, { then: 'regenerate' });
      expect([noReason.status, noReason.body.error.code]).toEqual([400, 'validation_failed']);
      const tooLong = await reject(actionId, { then: 'regenerate', reason: 'x'.repeat(1001) });
      expect(tooLong.status).toBe(400);

      const res = await reject(actionId, { then: 'regenerate', reason: 'Too formal; mention the trial.' });
      const retry = await reject(actionId, { then: 'regenerate', reason: 'Too formal; mention the trial.' });
      const other = await reject(actionId, { then: 'stop' });

      expect(res.body).toMatchObject({ status: 'rejected', reject_then: 'regenerate', reject_reason: 'Too formal; mention the trial.' });
      expect(retry.status).toBe(200);
      expect([other.status, other.body.error.code]).toEqual([409, 'action_not_pending']);
      const after = await b.enrollmentRow(enrollmentId);
      expect(after.context_version).toBe(before.context_version + 1);
      expect(ms(after.next_check_at) - Date.now()).toBeGreaterThan(29 * 60_000);
      expect(await b.outboxEvent(`rejected:${actionId}`)).toMatchObject({ data: { enrollment_id: enrollmentId, reason: 'draft_rejected', ref: actionId } });
    });

    it('stop ends the enrollment with user_exit', async () => {
      const c = await b.campaign(org);
      const { enrollmentId } = await b.enrollment(org, c.id);
      const { actionId } = await b.pendingAction(org, enrollmentId);

      const res = await reject(actionId, { then: 'stop' });

      expect(res.body).toMatchObject({ status: 'rejected', reject_then: 'stop', reject_reason: null });
      expect(await b.enrollmentRow(enrollmentId)).toMatchObject({ status: 'ended', ended_reason: 'user_exit', next_check_at: null });
    });
  });
});
