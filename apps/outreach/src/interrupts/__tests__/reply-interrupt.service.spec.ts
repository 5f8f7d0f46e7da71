import { aMessageReceived, FakeLogger, FakeTx, fakeOf } from '@touchpoint/testing';
import { type ContactView, type MessageReceivedData, MessagingRpc, OutreachEvents } from '@touchpoint/contracts';
import { AppError, ErrorCode } from '@touchpoint/errors';
import { type Logger, Metrics } from '@touchpoint/observability';
import type { RpcClient } from '@touchpoint/runtime';
import type { PeopleDirectory } from '../../directory/people.directory.js';
import type { EnrollmentsService } from '../../enrollments/enrollments.service.js';
import type { OutreachConfig } from '../../outreach.config.js';
import type { AutoReplyResumeService } from '../auto-reply-resume.service.js';
import type { CorrelatedEnrollment, InterruptsRepository } from '../interrupts.repository.js';
import type { OptOutService, SuppressionRequest } from '../opt-out.service.js';
import { ReplyInterruptService } from '../reply-interrupt.service.js';

const ORG = 'org-1';

/** The enrollment a reply correlates with: live, a CRM person, campaign active, outreach running. */
function aCorrelatedEnrollment(over: Partial<CorrelatedEnrollment> = {}): CorrelatedEnrollment {
  return { action_id: 'action-1', enrollment_id: 'enr-1', enrollment_status: 'active', person_kind: 'crm', person_id: 'person-1', campaign_active: true, outreach_stopped: false, ...over };
}

/** An email reply to our action's message, in its thread. */
const anEmailReply = (over: Partial<MessageReceivedData> = {}): MessageReceivedData =>
  aMessageReceived('person-1', { message_id: 'msg-1', channel: 'email', message_type: 'email', external_id: 'their-id', in_reply_to: 'our-id', thread_id: 'thread-1', text: 'Yes, Tuesday works', from: 'sarah@acme.example', ...over });

/** What the interrupt's dependencies were asked, and what they answer. */
class Fakes {
  correlated: CorrelatedEnrollment | null = aCorrelatedEnrollment();
  decisionSaved = false;
  /** The new context version `interrupt` answers (null: the enrollment ended meanwhile). */
  version: number | null = 2;
  promoteFails = false;
  correlatedWith: string[][] = [];
  interrupts: { enrollmentId: string; eventFollows: boolean }[] = [];
  promotions: string[] = [];
  updates: unknown[] = [];
  optOuts: SuppressionRequest[] = [];
  resumes: string[] = [];

  service(logger: FakeLogger, metrics: Metrics): ReplyInterruptService {
    const repo = fakeOf<InterruptsRepository>(
      {
        correlate: async (_db, _org, _channel, ids) => {
          this.correlatedWith.push(ids);
          return this.correlated;
        },
        learnThread: async () => true,
        decisionSaved: async () => this.decisionSaved,
      },
      'InterruptsRepository',
    );
    const enrollments = fakeOf<EnrollmentsService>(
      {
        interrupt: async (_tx, enrollmentId, eventFollows) => {
          this.interrupts.push({ enrollmentId, eventFollows });
          return this.version;
        },
        promote: async (_tx, enrollmentId) => {
          this.promotions.push(enrollmentId);
          return null;
        },
      },
      'EnrollmentsService',
    );
    const optOut = fakeOf<OptOutService>({ apply: async (_tx, request) => (this.optOuts.push(request), { enrollment_ids: [], suppressed: [] }) as never }, 'OptOutService');
    const resume = fakeOf<AutoReplyResumeService>({ apply: async (_tx, _org, enrollmentId) => (this.resumes.push(enrollmentId), 'moved') }, 'AutoReplyResumeService');
    const people = fakeOf<PeopleDirectory>({ person: async () => ({ email: 'Sarah@Acme.example', linkedin_url: null, linkedin_provider_id: null }) as ContactView }, 'PeopleDirectory');
    const rpc = fakeOf<RpcClient>(
      {
        call: async <T>(service: string, pattern: string, data: unknown) => {
          if (this.promoteFails) throw new AppError(ErrorCode.ServiceUnavailable, 'messaging is down');
          this.updates.push({ service, pattern, data });
          return {} as T;
        },
      },
      'RpcClient',
    );
    return new ReplyInterruptService(repo, enrollments, optOut, resume, people, rpc, metrics, { OUTREACH_CONTEXT_READ_TIMEOUT_MS: 2000 } as OutreachConfig, logger as unknown as Logger);
  }
}

describe(ReplyInterruptService.name, () => {
  let fakes: Fakes;
  let tx: FakeTx;
  let logger: FakeLogger;
  let metrics: Metrics;
  let sut: ReplyInterruptService;

  beforeEach(() => {
    fakes = new Fakes();
    tx = new FakeTx();
    logger = new FakeLogger();
    metrics = new Metrics('outreach');
    sut = fakes.service(logger, metrics);
  });

  describe('handle', () => {
    it('interrupts a reply: bumps the enrollment and requests a decision with id reply:{message_id}', async () => {
      expect(await sut.handle(tx, ORG, anEmailReply())).toBe('interrupted');
      expect(fakes.interrupts).toEqual([{ enrollmentId: 'enr-1', eventFollows: true }]);
      expect(tx.published).toEqual([{ event_id: 'reply:msg-1', type: OutreachEvents.DecisionRequested, organization_id: ORG, data: { enrollment_id: 'enr-1', reason: 'reply_received', ref: 'msg-1' } }]);
    });

    it.each([
      ['the campaign is paused', { campaign_active: false }],
      ['outreach is stopped', { outreach_stopped: true }],
    ])('holds a reply when %s: bumped, but no decision requested (the sweep asks after resume)', async (_case, over) => {
      fakes.correlated = aCorrelatedEnrollment(over);
      expect(await sut.handle(tx, ORG, anEmailReply())).toBe('held');
      expect(fakes.interrupts).toEqual([{ enrollmentId: 'enr-1', eventFollows: false }]);
      expect(tx.published).toEqual([]);
    });

    it.each([
      ['uncorrelated', 'no action of ours answered', (f: Fakes): void => void (f.correlated = null)],
      ['not_live', 'the enrollment ended', (f: Fakes): void => void (f.correlated = aCorrelatedEnrollment({ enrollment_status: 'ended' }))],
      ['duplicate', 'a decision is already saved for the event id', (f: Fakes): void => void (f.decisionSaved = true)],
    ] as const)('answers %s and changes nothing when %s', async (result, _case, arrange) => {
      arrange(fakes);
      expect(await sut.handle(tx, ORG, anEmailReply())).toBe(result);
      expect(fakes.interrupts).toEqual([]);
      expect(tx.published).toEqual([]);
    });

    it('answers lost when the enrollment ended while it tried to bump: no decision requested', async () => {
      fakes.version = null;
      expect(await sut.handle(tx, ORG, anEmailReply())).toBe('lost');
      expect(tx.published).toEqual([]);
    });

    it('stores an auto-reply only, and lets an email one move the next check past a stated return date', async () => {
      expect(await sut.handle(tx, ORG, anEmailReply({ auto_reply: true }))).toBe('auto_reply');
      expect(await sut.handle(tx, ORG, anEmailReply({ channel: 'linkedin', auto_reply: true }))).toBe('auto_reply');
      expect(fakes.resumes).toEqual(['enr-1']);
      expect(fakes.interrupts).toEqual([]);
      expect(tx.published).toEqual([]);
    });

    it("opts out on messaging's opt-out verdict (no agent, no bump): the person's addresses and the sender's", async () => {
      expect(await sut.handle(tx, ORG, anEmailReply({ opt_out: true, from: 'sarah.other@acme.example' }))).toBe('opt_out');
      expect(fakes.optOuts).toEqual([
        {
          organization_id: ORG,
          source: 'phrase',
          cause_id: 'msg-1',
          values: [
            { channel: 'email', value: 'sarah@acme.example' },
            { channel: 'email', value: 'sarah.other@acme.example' },
          ],
          person_ids: ['person-1', 'person-1'],
        },
      ]);
      expect(fakes.interrupts).toEqual([]);
    });

    it('correlates an email by its reply-to and thread only, a LinkedIn message also by its own id', async () => {
      await sut.handle(tx, ORG, anEmailReply());
      await sut.handle(tx, ORG, anEmailReply({ channel: 'linkedin' }));
      expect(fakes.correlatedWith).toEqual([
        ['our-id', 'thread-1'],
        ['our-id', 'thread-1', 'their-id'],
      ]);
    });

    it('counts each result by channel', async () => {
      await sut.handle(tx, ORG, anEmailReply());
      fakes.correlated = null;
      await sut.handle(tx, ORG, anEmailReply({ channel: 'linkedin' }));
      const text = await metrics.registry.getSingleMetricAsString('touchpoint_outreach_interrupts_total');
      expect(text).toContain('touchpoint_outreach_interrupts_total{channel="email",result="interrupted",service="outreach"} 1');
      expect(text).toContain('touchpoint_outreach_interrupts_total{channel="linkedin",result="uncorrelated",service="outreach"} 1');
    });

    describe("a prospect's first real reply", () => {
      beforeEach(() => void (fakes.correlated = aCorrelatedEnrollment({ person_kind: 'prospect' })));

      it('promotes the prospect to a CRM person in messaging, and the enrollment follows', async () => {
        expect(await sut.handle(tx, ORG, anEmailReply())).toBe('interrupted');
        expect(fakes.updates).toEqual([{ service: 'messaging', pattern: MessagingRpc.ContactUpdate, data: { organization_id: ORG, contact_id: 'person-1', kind: 'crm' } }]);
        expect(fakes.promotions).toEqual(['enr-1']);
      });

      it("does not promote on a verdict made without the email's headers, and still interrupts", async () => {
        expect(await sut.handle(tx, ORG, anEmailReply({ judgement_certain: false }))).toBe('interrupted');
        expect(fakes.updates).toEqual([]);
        expect(fakes.promotions).toEqual([]);
        expect(logger.events()).toContain('outreach.promote_skipped');
      });

      it('goes on with the interrupt when messaging cannot promote (best effort)', async () => {
        fakes.promoteFails = true;
        expect(await sut.handle(tx, ORG, anEmailReply())).toBe('interrupted');
        expect(fakes.promotions).toEqual([]);
        expect(logger.lines.filter((l) => l.level === 'warn').map((l) => l.fields.event)).toEqual(['outreach.promote_failed']);
      });
    });
  });
});
