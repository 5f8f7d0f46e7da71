import { randomUUID } from 'node:crypto';
import { type CampaignView, type EnrollBatchResult, type OutreachEnrollmentView, OutreachRpc, type PersonRef } from '@touchpoint/contracts';
import { AppError } from '@touchpoint/errors';
import { EnrollmentsService } from '../../apps/outreach/src/enrollments/enrollments.service.js';
import { type OutreachWorld, startOutreachWorld } from './outreach-world.js';

/** Milliseconds of a Date, an ISO string or a timestamp column (Date.parse drops a Date's milliseconds). */
const ms = (value: unknown): number => new Date(value as string).getTime();

describe(EnrollmentsService.name, () => {
  let w: OutreachWorld;
  let org: string;
  let secret: string;

  beforeAll(async () => {
    w = await startOutreachWorld('outreach_enroll', { gateway: true, outreachEnv: { OUTREACH_RUNNER_ENABLED: 'false' } });
    const seeded = await w.builders!.organizationWithKey({ scopes: ['outreach:read', 'outreach:write'] });
    org = seeded.organizationId;
    secret = seeded.secret;
  });
  afterAll(() => w.close());

  const campaign = (name = `Campaign ${randomUUID().slice(0, 6)}`, extra: Record<string, unknown> = {}) =>
    w.rpc.callUnchecked<CampaignView>('outreach', OutreachRpc.CampaignCreate, { organization_id: org, name, goal: 'Book a demo', allowed_channels: ['email'], max_touches: 3, followup_min_days: 2, followup_max_days: 5, ...extra });
  const batch = (campaignId: string, people: PersonRef[]) => w.rpc.callUnchecked<EnrollBatchResult>('outreach', OutreachRpc.EnrollBatch, { organization_id: org, campaign_id: campaignId, people }, 60_000);
  const people = async (n: number): Promise<PersonRef[]> => {
    const out: PersonRef[] = [];
    for (let i = 0; i < n; i += 20) {
      const chunk = await Promise.all(Array.from({ length: Math.min(20, n - i) }, () => w.contact(org)));
      out.push(...chunk.map((c) => ({ person_kind: 'prospect' as const, person_id: c.id })));
    }
    return out;
  };
  const live = async (campaignId: string) => (await w.sql<{ n: number }>(`SELECT count(*)::int AS n FROM {o}.enrollments WHERE campaign_id = $1 AND status IN ('active', 'needs_contact_data')`, [campaignId]))[0]!.n;
  const enrolledEvents = async (ids: string[]) => w.sql<{ event_id: string }>(`SELECT event_id FROM {o}.outbox_events WHERE type = 'outreach.decision.requested' AND event_id = ANY($1::text[])`, [ids.map((id) => `enrolled:${id}`)]);
  const errorOf = async (p: Promise<unknown>) => {
    try {
      await p;
    } catch (err) {
      return err as AppError;
    }
    throw new Error('expected a failure');
  };

  describe('enroll (one person, REST)', () => {
    it('writes an active row with touch_count 0, context_version 1 and the 30-minute event lease, and sends enrolled:{id}', async () => {
      const c = await campaign();
      const [person] = await people(1);
      const before = Date.now();
      const res = await w.http!('POST', `/agentic/outreach/campaigns/${c.id}/enrollments`, { secret, json: person });

      expect(res.status).toBe(201);
      expect(res.body).toMatchObject({ campaign_id: c.id, person_kind: 'prospect', person_id: person!.person_id, status: 'active', touch_count: 0, context_version: 1, ended_reason: null });
      const lease = ms(res.body.next_check_at) - before;
      expect(lease).toBeGreaterThanOrEqual(30 * 60_000 - 1000);
      expect(lease).toBeLessThanOrEqual(30 * 60_000 + 5000);
      const [event] = await w.sql(`SELECT payload FROM {o}.outbox_events WHERE event_id = $1`, [`enrolled:${res.body.id}`]);
      expect(event!.payload).toMatchObject({ type: 'outreach.decision.requested', organization_id: org, data: { enrollment_id: res.body.id, reason: 'enrolled' } });
    });

    it('answers the existing enrollment (200) for the same person in the same campaign, with no second event', async () => {
      const c = await campaign();
      const [person] = await people(1);
      const first = await w.http!('POST', `/agentic/outreach/campaigns/${c.id}/enrollments`, { secret, json: person });
      const again = await w.http!('POST', `/agentic/outreach/campaigns/${c.id}/enrollments`, { secret, json: person });

      expect(again.status).toBe(200);
      expect(again.body.id).toBe(first.body.id);
      expect(await w.sql(`SELECT 1 FROM {o}.enrollments WHERE person_id = $1`, [person!.person_id])).toHaveLength(1);
    });

    it('answers 409 already_enrolled with the other campaign name and status; after an exit the person can move', async () => {
      const a = await campaign('Spring push');
      const b = await campaign();
      const [person] = await people(1);
      const first = await w.http!('POST', `/agentic/outreach/campaigns/${a.id}/enrollments`, { secret, json: person });
      await w.http!('POST', `/agentic/outreach/campaigns/${a.id}/pause`, { secret });

      const refused = await w.http!('POST', `/agentic/outreach/campaigns/${b.id}/enrollments`, { secret, json: person });
      expect(refused.status).toBe(409);
      expect(refused.body.error).toMatchObject({ code: 'already_enrolled', details: { campaign_id: a.id, campaign_name: 'Spring push', campaign_status: 'paused', enrollment_id: first.body.id } });

      const exited = await w.http!('POST', `/agentic/outreach/enrollments/${first.body.id}/exit`, { secret });
      expect(exited.body).toMatchObject({ status: 'ended', ended_reason: 'user_exit', context_version: 2, next_check_at: null });
      const moved = await w.http!('POST', `/agentic/outreach/campaigns/${b.id}/enrollments`, { secret, json: person });
      expect(moved.status).toBe(201);
    });

    it('refuses an archived campaign (409 campaign_archived), a suppressed person (409 opted_out) and an unknown person (404)', async () => {
      const c = await campaign();
      const [person] = await people(1);
      const contact = await w.contact(org, { email: `gone.${randomUUID().slice(0, 6)}@example.com` });
      w.dispatcher.suppress(org, 'email', contact.email!.toUpperCase());

      const optedOut = await w.http!('POST', `/agentic/outreach/campaigns/${c.id}/enrollments`, { secret, json: { person_kind: 'prospect', person_id: contact.id } });
      expect([optedOut.status, optedOut.body.error.code]).toEqual([409, 'opted_out']);
      const unknown = await w.http!('POST', `/agentic/outreach/campaigns/${c.id}/enrollments`, { secret, json: { person_kind: 'prospect', person_id: randomUUID() } });
      expect([unknown.status, unknown.body.error.code]).toEqual([404, 'not_found']);
      const wrongKind = await w.http!('POST', `/agentic/outreach/campaigns/${c.id}/enrollments`, { secret, json: { person_kind: 'crm', person_id: person!.person_id } });
      expect(wrongKind.status).toBe(404);

      await w.http!('POST', `/agentic/outreach/campaigns/${c.id}/archive`, { secret });
      const archived = await w.http!('POST', `/agentic/outreach/campaigns/${c.id}/enrollments`, { secret, json: person });
      expect([archived.status, archived.body.error.code]).toEqual([409, 'campaign_archived']);
    });

    it('answers 503 and writes nothing when the suppression list cannot be read', async () => {
      const c = await campaign();
      const [person] = await people(1);
      w.dispatcher.suppressionOutage = true;
      try {
        const res = await w.http!('POST', `/agentic/outreach/campaigns/${c.id}/enrollments`, { secret, json: person });
        expect([res.status, res.body.error.code]).toEqual([503, 'service_unavailable']);
      } finally {
        w.dispatcher.suppressionOutage = false;
      }
      expect(await live(c.id)).toBe(0);
    });

    it('names the suppression list, not itself, when the dispatcher is too slow to answer within the gateway deadline', async () => {
      const c = await campaign();
      const [person] = await people(1);
      w.dispatcher.suppressionDelayMs = 8_000;
      try {
        const res = await w.http!('POST', `/agentic/outreach/campaigns/${c.id}/enrollments`, { secret, json: person });
        expect([res.status, res.body.error.code]).toEqual([503, 'service_unavailable']);
        // The gateway's own timeout would say "outreach did not answer".
        expect(res.body.error.message).toMatch(/suppression list/);
      } finally {
        w.dispatcher.suppressionDelayMs = 0;
      }
      expect(await live(c.id)).toBe(0);
    });
  });

  describe('enroll (batch)', () => {
    it('answers 422 batch_too_large for 201 people and writes nothing', async () => {
      const c = await campaign();
      const list = Array.from({ length: 201 }, () => ({ person_kind: 'prospect', person_id: randomUUID() }));
      const res = await w.http!('POST', `/agentic/outreach/campaigns/${c.id}/enrollments/batch`, { secret, json: { people: list } });

      expect(res.status).toBe(422);
      expect(res.body.error).toMatchObject({ code: 'batch_too_large', details: { max: 200, given: 201 } });
      expect(await live(c.id)).toBe(0);
    });

    it('answers one result per person in order, and one refusal never blocks the others', async () => {
      const other = await campaign('Other one');
      const c = await campaign();
      const [a, b, d] = await people(3);
      const suppressedContact = await w.contact(org);
      w.dispatcher.suppress(org, 'email', suppressedContact.email!);
      await batch(other.id, [b!]);
      const missing = { person_kind: 'prospect' as const, person_id: randomUUID() };

      const res = await w.http!('POST', `/agentic/outreach/campaigns/${c.id}/enrollments/batch`, {
        secret,
        json: { people: [a, b, { person_kind: 'prospect', person_id: suppressedContact.id }, missing, d, a] },
      });

      expect(res.status).toBe(200);
      expect(res.body.results.map((r: { result: string }) => r.result)).toEqual(['added', 'already_enrolled', 'opted_out', 'not_found', 'added', 'added']);
      expect(res.body.results[1]).toMatchObject({ person_id: b!.person_id, campaign_id: other.id, campaign_name: 'Other one', campaign_status: 'active' });
      expect(res.body.results[5]).toMatchObject({ existing: true, enrollment_id: res.body.results[0].enrollment_id });
      expect(await live(c.id)).toBe(2);
    });

    it('accepts enrollments into a paused campaign (the person waits for resume)', async () => {
      const c = await campaign();
      await w.rpc.call('outreach', OutreachRpc.CampaignPause, { organization_id: org, campaign_id: c.id });
      const result = await batch(c.id, await people(2));
      expect(result.results.map((r) => r.result)).toEqual(['added', 'added']);
    });

    it("pages a campaign's enrollments by cursor: rows sharing one timestamp each come exactly once; a bad or foreign cursor is 422", async () => {
      const c = await campaign();
      await batch(c.id, await people(12));
      // One instant for all of them, so only the id orders the page boundaries.
      await w.sql(`UPDATE {o}.enrollments SET created_at = '2026-11-30T12:00:00.123456Z' WHERE campaign_id = $1`, [c.id]);
      const seen: string[] = [];
      const sizes: number[] = [];
      let cursor: string | null = null;
      do {
        const res: { status: number; body: { items: OutreachEnrollmentView[]; next_cursor: string | null } } = await w.http!('GET', `/agentic/outreach/campaigns/${c.id}/enrollments?limit=5${cursor ? `&cursor=${cursor}` : ''}`, { secret });
        expect(res.status).toBe(200);
        seen.push(...res.body.items.map((e) => e.id));
        sizes.push(res.body.items.length);
        cursor = res.body.next_cursor;
      } while (cursor);
      expect(sizes).toEqual([5, 5, 2]);
      expect(new Set(seen).size).toBe(12);

      const first = await w.http!('GET', `/agentic/outreach/campaigns/${c.id}/enrollments?limit=5`, { secret });
      const otherStatus = await w.http!('GET', `/agentic/outreach/campaigns/${c.id}/enrollments?limit=5&status=ended&cursor=${first.body.next_cursor}`, { secret });
      expect([otherStatus.status, otherStatus.body.error.code]).toEqual([422, 'invalid_cursor']);
      const garbage = await w.http!('GET', `/agentic/outreach/campaigns/${c.id}/enrollments?cursor=garbage`, { secret });
      expect([garbage.status, garbage.body.error.code]).toEqual([422, 'invalid_cursor']);
    });

    it('answers campaign_full past 200 live enrollments', async () => {
      const c = await campaign();
      const list = await people(203);
      const first = await batch(c.id, list.slice(0, 200));
      expect(first.results.every((r) => r.result === 'added')).toBe(true);

      const more = await batch(c.id, list.slice(200));
      expect(more.results.map((r) => r.result)).toEqual(['campaign_full', 'campaign_full', 'campaign_full']);
      expect(await live(c.id)).toBe(200);
    });

    it('never leaves more than 200 live when two batches race at the cap, and sends no event for a row taken back', async () => {
      const c = await campaign();
      const list = await people(350);
      await batch(c.id, list.slice(0, 150));

      const [x, y] = await Promise.all([batch(c.id, list.slice(150, 250)), batch(c.id, list.slice(250, 350))]);

      const results = [...x.results, ...y.results];
      const added = results.filter((r) => r.result === 'added') as { enrollment_id: string }[];
      const full = results.filter((r) => r.result === 'campaign_full');
      expect(await live(c.id)).toBe(200);
      expect(added).toHaveLength(50);
      expect(full).toHaveLength(150);
      const rows = await w.sql<{ id: string; person_id: string }>(`SELECT id, person_id FROM {o}.enrollments WHERE campaign_id = $1`, [c.id]);
      const fullIds = new Set(full.map((r) => r.person_id));
      expect(rows.filter((r) => fullIds.has(r.person_id))).toEqual([]);
      expect((await enrolledEvents(rows.map((r) => r.id))).length).toBe(200);
    });
  });

  describe('campaigns', () => {
    it('pauses, resumes and archives (final), with statuses exactly as the seed', async () => {
      const c = await campaign();
      const paused = await w.http!('POST', `/agentic/outreach/campaigns/${c.id}/pause`, { secret });
      expect(paused.body).toMatchObject({ status: 'paused' });
      expect(paused.body.paused_at).not.toBeNull();
      const resumed = await w.http!('POST', `/agentic/outreach/campaigns/${c.id}/resume`, { secret });
      expect(resumed.body.status).toBe('active');
      const [person] = await people(1);
      const enrolled = await w.http!('POST', `/agentic/outreach/campaigns/${c.id}/enrollments`, { secret, json: person });

      const archived = await w.http!('POST', `/agentic/outreach/campaigns/${c.id}/archive`, { secret });
      expect(archived.body).toMatchObject({ status: 'archived', live_enrollments: 0 });
      const ended = await w.http!('GET', `/agentic/outreach/enrollments/${enrolled.body.id}`, { secret });
      expect(ended.body).toMatchObject({ status: 'ended', ended_reason: 'campaign_archived' });
      const resumeArchived = await w.http!('POST', `/agentic/outreach/campaigns/${c.id}/resume`, { secret });
      expect([resumeArchived.status, resumeArchived.body.error.code]).toEqual([409, 'campaign_archived']);
    });

    it('deletes only a campaign that never had an enrollment', async () => {
      const empty = await campaign();
      const used = await campaign();
      await batch(used.id, await people(1));

      expect((await w.http!('DELETE', `/agentic/outreach/campaigns/${empty.id}`, { secret })).status).toBe(200);
      expect((await w.http!('GET', `/agentic/outreach/campaigns/${empty.id}`, { secret })).status).toBe(404);
      const refused = await w.http!('DELETE', `/agentic/outreach/campaigns/${used.id}`, { secret });
      expect([refused.status, refused.body.error.code]).toEqual([409, 'campaign_has_enrollments']);
    });

    it('refuses a campaign of another organization with 404', async () => {
      const other = await w.builders!.organizationWithKey({ scopes: ['outreach:read', 'outreach:write'] });
      const c = await campaign();
      const res = await w.http!('GET', `/agentic/outreach/campaigns/${c.id}`, { secret: other.secret });
      expect(res.status).toBe(404);
      for (const id of [c.id, randomUUID()]) {
        const enrollments = await w.http!('GET', `/agentic/outreach/campaigns/${id}/enrollments`, { secret: other.secret });
        expect([enrollments.status, enrollments.body.error?.code]).toEqual([404, 'not_found']);
      }
      expect((await w.http!('GET', `/agentic/outreach/campaigns/${c.id}/enrollments`, { secret })).body).toEqual({ items: [], next_cursor: null });
    });

    it('stops and resumes outreach for the organization', async () => {
      const stopped = await w.http!('POST', '/agentic/outreach/stop', { secret });
      expect(stopped.body.outreach_stopped_at).not.toBeNull();
      const again = await w.http!('POST', '/agentic/outreach/stop', { secret });
      expect(again.body.outreach_stopped_at).toBe(stopped.body.outreach_stopped_at);
      const resumed = await w.http!('POST', '/agentic/outreach/resume', { secret });
      expect(resumed.body.outreach_stopped_at).toBeNull();
    });
  });

  describe('manualRetry', () => {
    it('moves needs_contact_data back to active with a new version, the event lease and a manual_retry event', async () => {
      const c = await campaign();
      const result = await batch(c.id, await people(1));
      const id = (result.results[0] as { enrollment_id: string }).enrollment_id;
      await w.sql(`UPDATE {o}.enrollments SET status = 'needs_contact_data', next_check_at = NULL, context_version = 2 WHERE id = $1`, [id]);

      const view = await w.rpc.callUnchecked<OutreachEnrollmentView>('outreach', OutreachRpc.EnrollmentManualRetry, { organization_id: org, enrollment_id: id });
      expect(view).toMatchObject({ status: 'active', context_version: 3 });
      expect(view.next_check_at).not.toBeNull();
      const [event] = await w.sql(`SELECT payload FROM {o}.outbox_events WHERE event_id = $1`, [`retry:${id}:3`]);
      expect(event!.payload.data).toEqual({ enrollment_id: id, reason: 'manual_retry' });

      const again = await errorOf(w.rpc.call('outreach', OutreachRpc.EnrollmentManualRetry, { organization_id: org, enrollment_id: id }));
      expect(again.code).toBe('conflict');
    });
  });
});
