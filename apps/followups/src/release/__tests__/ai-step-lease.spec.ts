import { jest } from '@jest/globals';
import { AiRpc, type AiRunResult } from '@touchpoint/contracts';
import type { Logger } from '@touchpoint/observability';
import type { RpcClient } from '@touchpoint/runtime';
import type { ContactActivity } from '../../contacts/contacts.repository.js';
import type { AiDraft, EnrollmentRow } from '../../enrollments/enrollment-row.js';
import type { FollowupsConfig } from '../../followups.config.js';
import type { FollowupsMetrics } from '../../metrics/followups.metrics.js';
import { AI_DRAFT_TTL_MS, AiStepLease } from '../ai-step-lease.js';
import type { AiRequest, ReleaseContext } from '../release-context.js';
import type { StepOutcomes } from '../step-outcomes.js';

const NOW = new Date('2026-03-10T15:00:00.000Z');
const LEASE_MS = 60_000;
const RESULT: AiRunResult = { run_id: 'run-1', status: 'ok', output: { class: 'yes', confidence: 0.9 }, usage: null };

function aContext(o: { state?: Partial<EnrollmentRow>; contact?: Partial<ContactActivity>; ai?: ReleaseContext['ai'] } = {}): ReleaseContext {
  return {
    now: NOW,
    state: { id: 'enr-1', organization_id: 'org-1', node_id: 'n-ai', step: 4, ai_attempts: 2, ai_draft: null, locked_until: null, next_run_at: NOW, ...o.state } as EnrollmentRow,
    contact: { last_inbound_at: null, ...o.contact } as ContactActivity,
    ai: o.ai,
    events: [],
    messages: [],
    effects: [],
  } as unknown as ReleaseContext;
}

const request = (o: Partial<AiRequest> = {}): AiRequest => ({ enrollmentId: 'enr-1', organizationId: 'org-1', nodeId: 'n-ai', step: 4, attempts: 2, kind: 'followup_classify', input: { reply: 'yes', classes: [] }, ...o });
const draft = (o: Partial<AiDraft> = {}): AiDraft => ({ node_id: 'n-ai', step: 4, at: new Date(NOW.getTime() - 60_000).toISOString(), result: RESULT, ...o });

function aLease() {
  const rpc = { call: jest.fn(async () => RESULT) };
  const outcomes = { event: jest.fn() };
  const metrics = { aiRequests: { inc: jest.fn() } };
  const logger = { info: jest.fn() };
  const config = { FOLLOWUP_AI_LEASE_MS: LEASE_MS, FOLLOWUP_AI_TIMEOUT_MS: 20_000 } as FollowupsConfig;
  const sut = new AiStepLease(rpc as unknown as RpcClient, outcomes as unknown as StepOutcomes, metrics as unknown as FollowupsMetrics, config, logger as unknown as Logger);
  return { sut, rpc, outcomes, metrics, logger };
}

describe(AiStepLease.name, () => {
  describe('request', () => {
    it('bumps the fence, leases the enrollment until now + FOLLOWUP_AI_LEASE_MS and leaves the call for after the commit', () => {
      const { sut, outcomes } = aLease();
      const ctx = aContext();
      sut.request(ctx, 'n-ai', 'followup_classify', { reply: 'yes', classes: [] });
      const until = new Date(NOW.getTime() + LEASE_MS);
      expect(ctx.state).toMatchObject({ ai_attempts: 3, locked_until: until, next_run_at: until });
      expect(ctx.aiRequest).toEqual(request({ attempts: 3 }));
      expect(outcomes.event).toHaveBeenCalledWith(ctx, 'ai_requested', { kind: 'followup_classify', attempt: 3 });
    });
  });

  describe('answerFor', () => {
    it.each<[string, ReleaseContext['ai'], boolean]>([
      ['uses the answer of this node, visit and fence', { request: request(), result: RESULT }, true],
      ['has no answer on a first pass', undefined, false],
      ['ignores the answer for another node', { request: request({ nodeId: 'n-other' }), result: RESULT }, false],
      ['ignores the answer for another visit of the node', { request: request({ step: 3 }), result: RESULT }, false],
      ['ignores the answer under a fence another release moved on', { request: request({ attempts: 1 }), result: RESULT }, false],
    ])('%s', (_, ai, used) => {
      const { sut } = aLease();
      expect(sut.answerFor(aContext({ ai }), 'n-ai')).toBe(used ? RESULT : undefined);
    });
  });

  describe('storedDraft', () => {
    it.each<[string, AiDraft | null, Date | null, boolean]>([
      ['uses a draft of this visit a minute old', draft(), null, true],
      ['uses a draft exactly AI_DRAFT_TTL_MS old', draft({ at: new Date(NOW.getTime() - AI_DRAFT_TTL_MS).toISOString() }), null, true],
      ['has nothing without a draft', null, null, false],
      ['drops a draft older than AI_DRAFT_TTL_MS', draft({ at: new Date(NOW.getTime() - AI_DRAFT_TTL_MS - 1).toISOString() }), null, false],
      ['drops a draft of another visit', draft({ step: 3 }), null, false],
      ['drops a draft of another node', draft({ node_id: 'n-other' }), null, false],
      ['drops a draft the contact wrote after (the moment changed)', draft(), new Date(NOW.getTime() - 1000), false],
      ['uses a draft the contact wrote before', draft(), new Date(NOW.getTime() - 120_000), true],
    ])('%s', (_, aiDraft, lastInboundAt, used) => {
      const { sut } = aLease();
      expect(sut.storedDraft(aContext({ state: { ai_draft: aiDraft }, contact: { last_inbound_at: lastInboundAt } }), 'n-ai')).toBe(used ? RESULT : undefined);
    });
  });

  describe('ask', () => {
    it('asks ai-gateway once per fence (the attempt is in the key) and counts the answer by status', async () => {
      const { sut, rpc, metrics } = aLease();
      const answer = await sut.ask(request());
      expect(answer).toEqual({ request: request(), result: RESULT });
      expect(rpc.call).toHaveBeenCalledWith('ai-gateway', AiRpc.Run, expect.objectContaining({ organization_id: 'org-1', kind: 'followup_classify', idempotency_key: 'followup:enr-1:n-ai:4:2', timeout_ms: 20_000 }), expect.any(Number));
      expect(metrics.aiRequests.inc).toHaveBeenCalledWith({ kind: 'followup_classify', status: 'ok' });
    });
  });

  describe('fenceOf / dropped', () => {
    it('claims the second pass under the first pass fence, and counts a late answer as late_dropped', () => {
      const { sut, metrics, logger } = aLease();
      const answer = { request: request(), result: RESULT };
      expect(sut.fenceOf(answer)).toEqual({ id: 'enr-1', aiAttempts: 2, nodeId: 'n-ai', step: 4 });
      sut.dropped(answer);
      expect(metrics.aiRequests.inc).toHaveBeenCalledWith({ kind: 'followup_classify', status: 'late_dropped' });
      expect(logger.info).toHaveBeenCalledWith(expect.objectContaining({ event: 'followups.ai_late_answer_dropped', enrollment_id: 'enr-1' }), 'late AI answer dropped');
    });
  });
});
