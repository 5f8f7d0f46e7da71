import type { AbuseCheckBatchAnswer, AbuseCheckBatchData, AbuseCheckData, AbuseVerdict } from '@touchpoint/contracts';
import { AppError, ErrorCode } from '@touchpoint/errors';
import { Metrics } from '@touchpoint/observability';
import type { RpcClient, UnitOfWork } from '@touchpoint/runtime';
import { FakeLogger, fakeOf } from '@touchpoint/testing';
import { FixedClock } from '@touchpoint/time';
import type { MessagingConfig } from '../../messaging.config.js';
import type { RestrictionsRepository } from '../restrictions.repository.js';
import { AbuseGuardService } from '../abuse-guard.service.js';

const allowed: AbuseVerdict = { allowed: true, limit_type: null, reset_at: null, action: null, patterns: [] };
const limited: AbuseVerdict = { allowed: false, limit_type: 'minute', reset_at: '2026-03-02T09:01:00.000Z', action: null, patterns: [] };

/** One message's check, told apart by its provider id. */
const aCheck = (ref: string): AbuseCheckData => ({
  organization_id: 'org-1',
  contact_id: `contact-${ref}`,
  conversation_id: `conversation-${ref}`,
  instance_id: 'instance-1',
  instance_message_count: 0,
  channel: 'whatsapp',
  message_ref: ref,
  text: 'oi',
  sent_at: '2026-03-02T09:00:00.000Z',
});

describe(AbuseGuardService.name, () => {
  /** The calls the fake RPC client got, by pattern, and how it answers the batch call. */
  let calls: { pattern: string; data: unknown; timeoutMs?: number }[];
  let answer: (data: AbuseCheckBatchData) => Promise<AbuseCheckBatchAnswer>;
  let sut: AbuseGuardService;

  beforeEach(() => {
    calls = [];
    answer = async (data) => ({ outcomes: data.checks.map((c) => ({ verdict: c.message_ref === 'limited' ? limited : allowed })) });
    const rpc = fakeOf<RpcClient>({
      call: (async (_service: string, pattern: string, data: unknown, timeoutMs?: number) => {
        calls.push({ pattern, data, timeoutMs });
        if (pattern === 'abuse.check_batch') return answer(data as AbuseCheckBatchData);
        // The state read of the fallback: no restriction in force.
        if (pattern === 'abuse.restrictions.active') return { restriction: null };
        throw new Error(`unexpected ${pattern}`);
      }) as RpcClient['call'],
    });
    const config = { ABUSE_CHECK_TIMEOUT_MS: 2000, ABUSE_STATE_TIMEOUT_MS: 1000 } as MessagingConfig;
    sut = new AbuseGuardService(rpc, fakeOf<UnitOfWork>(), fakeOf<RestrictionsRepository>(), new FixedClock(new Date('2026-03-02T09:00:00Z')), new Metrics('messaging'), config, new FakeLogger() as never);
  });

  describe('check', () => {
    it('sends the checks asked in the same turn in one abuse.check_batch call, in the order asked, and gives each its own verdict', async () => {
      const verdicts = await Promise.all([sut.check(aCheck('first')), sut.check(aCheck('limited')), sut.check(aCheck('third'))]);
      expect(calls).toEqual([{ pattern: 'abuse.check_batch', data: { checks: [aCheck('first'), aCheck('limited'), aCheck('third')] }, timeoutMs: 2000 }]);
      expect(verdicts).toEqual([
        { ...allowed, source: 'abuse' },
        { ...limited, source: 'abuse' },
        { ...allowed, source: 'abuse' },
      ]);
    });

    it('sends a check asked after the call left in a call of its own', async () => {
      await sut.check(aCheck('first'));
      await sut.check(aCheck('second'));
      expect(calls.map((c) => (c.data as AbuseCheckBatchData).checks.map((k) => k.message_ref))).toEqual([['first'], ['second']]);
    });

    it('decides a check the service answered with an error as a failed check (the block in force), and the others by their verdicts', async () => {
      answer = async (data) => ({ outcomes: data.checks.map((c) => (c.message_ref === 'refused' ? { error: { code: ErrorCode.ValidationFailed, message: 'conversation_id is required' } } : { verdict: limited })) });
      const verdicts = await Promise.all([sut.check(aCheck('refused')), sut.check(aCheck('other'))]);
      expect(verdicts).toEqual([
        { ...allowed, source: 'fail_open' },
        { ...limited, source: 'abuse' },
      ]);
      expect(calls.map((c) => c.pattern)).toEqual(['abuse.check_batch', 'abuse.restrictions.active']);
    });

    it('decides every check of a call that failed by the block in force, each on its own', async () => {
      answer = async () => {
        throw new AppError(ErrorCode.ServiceUnavailable, 'abuse did not answer within 2000 ms');
      };
      const verdicts = await Promise.all([sut.check(aCheck('a')), sut.check(aCheck('b'))]);
      expect(verdicts.map((v) => v.source)).toEqual(['fail_open', 'fail_open']);
      expect(calls.map((c) => c.pattern)).toEqual(['abuse.check_batch', 'abuse.restrictions.active', 'abuse.restrictions.active']);
    });
  });
});
