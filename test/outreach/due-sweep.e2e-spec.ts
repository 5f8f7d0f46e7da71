import { randomUUID } from 'node:crypto';
import { OutreachRpc } from '@touchpoint/contracts';
import pg from 'pg';
import { ServiceConfig } from '@touchpoint/config';
import { Metrics } from '@touchpoint/observability';
import { ExecutionRunner } from '../../apps/outreach/src/execution/execution.runner.js';
import { DueSweepService, SWEEP_LOCK_KEY, SWEEP_MAX_EVENTS_PER_PASS } from '../../apps/outreach/src/sweep/sweep.service.js';
import { outreachBuilders } from './builders.js';
import { type OutreachWorld, startOutreachWorld } from './outreach-world.js';

/**
 * The due sweep (seed 003 §4.7) against the real PostgreSQL and RabbitMQ. The runner loops are off
 * in this world so the rows stay as the test leaves them; each pass is started by hand.
 */
describe(DueSweepService.name, () => {
  let w: OutreachWorld;
  let b: ReturnType<typeof outreachBuilders>;
  let sut: DueSweepService;
  const org = `org-${randomUUID()}`;

  beforeAll(async () => {
    w = await startOutreachWorld('outreach_sweep', { outreachEnv: { OUTREACH_RUNNER_ENABLED: 'false', OUTREACH_SWEEP_INTERVAL_MS: '0' } });
    b = outreachBuilders(w);
    sut = w.outreach.get(DueSweepService);
  });
  afterAll(() => w.close());

  const event = async (eventId: string) => (await w.sql(`SELECT type, payload FROM {o}.outbox_events WHERE event_id = $1`, [eventId]))[0];
  const dueAt = async (enrollmentId: string, at: Date) => {
    await w.sql(`UPDATE {o}.enrollments SET next_check_at = $2 WHERE id = $1`, [enrollmentId, at]);
    return `due:${enrollmentId}:${at.toISOString()}`;
  };
  const approvedDue = async (enrollmentId: string, at: Date) => {
    const { actionId } = await b.pendingAction(org, enrollmentId);
    await w.sql(`UPDATE {o}.proposed_actions SET status = 'approved', approved_payload = draft_payload, approved_hash = 'h', approved_at = $2, next_attempt_at = $2 WHERE id = $1`, [actionId, at]);
    return { actionId, eventId: `approved:${actionId}:${at.toISOString()}` };
  };

  describe('runOnce', () => {
    it("picks up a paused campaign's due rows after resume (Q1 and Q2), and sends nothing for them while paused", async () => {
      const campaign = await b.campaign(org);
      const first = await b.enrollment(org, campaign.id);
      const later = await b.enrollment(org, campaign.id);
      const past = new Date(Date.now() - 3_600_000);
      const firstDue = await dueAt(first.enrollmentId, past);
      // An enrollment with an earlier decision: its due run is a plain follow-up.
      const { eventId: approvedId } = await approvedDue(later.enrollmentId, new Date(past.getTime() + 1000));
      const laterDue = await dueAt(later.enrollmentId, new Date(past.getTime() + 2000));

      await w.rpc.call('outreach', OutreachRpc.CampaignPause, { organization_id: org, campaign_id: campaign.id });
      expect((await sut.runOnce()).ran).toBe(true);
      expect(await event(firstDue)).toBeUndefined();
      expect(await event(laterDue)).toBeUndefined();
      expect(await event(approvedId)).toBeUndefined();

      await w.rpc.call('outreach', OutreachRpc.CampaignResume, { organization_id: org, campaign_id: campaign.id });
      await sut.runOnce();
      // No decision was ever made for the first one (the pause skipped its enrolled run): it still
      // asks as followup_due (seed 003 §4.7); the decision runner makes it a first touch.
      expect(await event(firstDue)).toMatchObject({ type: 'outreach.decision.requested', payload: { data: { enrollment_id: first.enrollmentId, reason: 'followup_due' } } });
      expect(await event(laterDue)).toMatchObject({ type: 'outreach.decision.requested', payload: { data: { enrollment_id: later.enrollmentId, reason: 'followup_due' } } });
      expect(await event(approvedId)).toMatchObject({ type: 'outreach.action.approved', payload: { data: { enrollment_id: later.enrollmentId } } });

      // A second pass over unchanged rows repeats the same ids: the outbox keeps one row per id.
      await sut.runOnce();
      expect(await w.sql(`SELECT count(*)::int AS n FROM {o}.outbox_events WHERE event_id = ANY($1)`, [[firstDue, laterDue, approvedId]])).toEqual([{ n: 3 }]);
    });

    it('asks again, under a new event id, for an approved action whose execution run failed for good', async () => {
      const campaign = await b.campaign(org);
      const e = await b.enrollment(org, campaign.id);
      const { actionId, eventId } = await approvedDue(e.enrollmentId, new Date(Date.now() - 60_000));
      // Its first execution run (keyed by that event id) failed for good.
      const [failed] = await w.sql(
        `INSERT INTO {o}.workflow_runs (run_key, kind, organization_id, subject_id, input, status, attempts, run_after, created_at, finished_at, last_error)
         VALUES ($1, 'execution', $2, $3, $4, 'failed', 5, now(), now(), now(), 'database gone') RETURNING *`,
        [eventId, org, actionId, JSON.stringify({ action_id: actionId, enrollment_id: e.enrollmentId })],
      );

      await w.outreach.get(ExecutionRunner).onFailure(failed as never, 'database gone');
      await sut.runOnce();

      const asked = await w.sql(`SELECT event_id FROM {o}.outbox_events WHERE type = 'outreach.action.approved' AND payload->'data'->>'action_id' = $1`, [actionId]);
      expect(asked).toHaveLength(1);
      expect(asked[0]!.event_id).not.toBe(eventId);
      expect(await w.sql(`SELECT count(*)::int AS n FROM {o}.workflow_runs WHERE run_key = $1`, [asked[0]!.event_id])).toEqual([{ n: 0 }]);
      expect((await b.action(actionId)).status).toBe('approved');
    });

    it('skips an organization whose outreach is stopped, and rows not yet due', async () => {
      const stoppedOrg = `org-${randomUUID()}`;
      const campaign = await b.campaign(stoppedOrg);
      const e = await b.enrollment(stoppedOrg, campaign.id);
      const due = await dueAt(e.enrollmentId, new Date(Date.now() - 60_000));
      const campaign2 = await b.campaign(org);
      const future = await b.enrollment(org, campaign2.id);
      const notDue = await dueAt(future.enrollmentId, new Date(Date.now() + 60_000));

      await w.rpc.call('outreach', OutreachRpc.Stop, { organization_id: stoppedOrg });
      await sut.runOnce();
      expect(await event(due)).toBeUndefined();
      expect(await event(notDue)).toBeUndefined();

      await w.rpc.call('outreach', OutreachRpc.Resume, { organization_id: stoppedOrg });
      await sut.runOnce();
      expect(await event(due)).toMatchObject({ type: 'outreach.decision.requested' });
    });

    it('runs one pass at a time: while another session holds the lock, a pass does nothing', async () => {
      const holder = new pg.Client({ connectionString: w.world.config(ServiceConfig).DATABASE_URL });
      await holder.connect();
      try {
        const key = `${SWEEP_LOCK_KEY}:${w.schema}`;
        await holder.query('SELECT pg_advisory_lock(hashtext($1))', [key]);
        expect(await sut.runOnce()).toEqual({ ran: false, decisions: 0, executions: 0 });
        await holder.query('SELECT pg_advisory_unlock(hashtext($1))', [key]);
        expect((await sut.runOnce()).ran).toBe(true);
      } finally {
        await holder.end();
      }
    });

    it(`sends at most ${SWEEP_MAX_EVENTS_PER_PASS} events per pass, Q1 first, oldest first`, async () => {
      const bulkOrg = `org-${randomUUID()}`;
      const campaign = await b.campaign(bulkOrg);
      const e = await b.enrollment(bulkOrg, campaign.id);
      const { eventId: approvedId } = await approvedDue(e.enrollmentId, new Date(Date.now() - 10 * 86_400_000));
      // Enough due enrollments (older than every other row of this file) to fill a pass on their own.
      await w.sql(
        `INSERT INTO {o}.enrollments (organization_id, campaign_id, person_kind, person_id, status, next_check_at, created_at, updated_at)
         SELECT $1, $2, 'prospect', 'bulk-' || g, 'active', now() - interval '30 days' + g * interval '1 second', now(), now() FROM generate_series(1, $3) g`,
        [bulkOrg, campaign.id, SWEEP_MAX_EVENTS_PER_PASS + 1],
      );
      const pass = await sut.runOnce();
      expect(pass).toEqual({ ran: true, decisions: SWEEP_MAX_EVENTS_PER_PASS, executions: 0 });
      expect(await event(approvedId)).toBeUndefined();
      const [newest] = await w.sql(`SELECT id, next_check_at FROM {o}.enrollments WHERE person_id = $1`, [`bulk-${SWEEP_MAX_EVENTS_PER_PASS + 1}`]);
      expect(await event(`due:${newest!.id}:${new Date(newest!.next_check_at).toISOString()}`)).toBeUndefined();
      const [oldest] = await w.sql(`SELECT id, next_check_at FROM {o}.enrollments WHERE person_id = 'bulk-1'`);
      expect(await event(`due:${oldest!.id}:${new Date(oldest!.next_check_at).toISOString()}`)).toBeDefined();
    }, 60_000);
  });

  describe('metrics', () => {
    it('exposes the sweep lag, the events sent, actions by status and the due backlog', async () => {
      const text = await w.outreach.get(Metrics).registry.metrics();
      expect(text).toMatch(/touchpoint_outreach_sweep_lag_seconds_count\{[^}]*kind="decision"[^}]*\} [1-9]/);
      expect(text).toMatch(/touchpoint_outreach_sweep_events_total\{kind="decision"[^}]*\} [1-9]/);
      expect(text).toMatch(/touchpoint_outreach_actions\{status="approved"[^}]*\} [1-9]/);
      expect(text).toMatch(/touchpoint_outreach_due_enrollments(\{[^}]*\})? [1-9]/);
    });
  });
});
