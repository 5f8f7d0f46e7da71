import type { ReceivedCall } from '../safety/ledger.js';
import type { GatewayClient } from '../../scripts/demo/http-clients.js';
import { duplicateSends, formatReport, forbiddenSends, hasViolations, judge, type JudgeInput, type ObservedSend, observeEntry, pacingViolations } from './reconcile.js';
import type { LedgerEntry } from './types.js';

const T0 = Date.UTC(2026, 11, 1, 20, 0, 0);
const NUMBER = '700000000000017';
const GRANT = 'chaos-default-s17';

let seq = 0;
/** A Meta `messages` call as the sandbox logs it: taken (a wamid) unless `outcome` says otherwise. */
function meta(p: { to: string; text: string; atMs: number; entry?: string; outcome?: string; type?: string }): ReceivedCall {
  const outcome = p.outcome ?? 'accepted';
  const taken = outcome === 'accepted' || outcome === 'timeout' || outcome === 'drop';
  return {
    seq: ++seq,
    at: T0 + p.atMs,
    arrived_at: T0 + p.atMs,
    operation: 'messages',
    context: { phone_number_id: NUMBER, to: p.to, wa_id: p.to, type: p.type ?? 'text', biz_opaque_callback_data: p.entry ?? '', message_id: '' },
    body: { messaging_product: 'whatsapp', to: p.to, type: 'text', text: { body: p.text }, biz_opaque_callback_data: p.entry },
    outcome,
    ...(taken ? { provider_id: `wamid.${seq}` } : {}),
  };
}

function nylas(p: { to: string; body: string; atMs: number; outcome?: string; grant?: string }): ReceivedCall {
  const outcome = p.outcome ?? 'accepted';
  return {
    seq: ++seq,
    at: T0 + p.atMs,
    arrived_at: T0 + p.atMs,
    operation: 'send',
    context: { grant_id: p.grant ?? GRANT, to: p.to, reply_to_message_id: '' },
    body: { subject: 'Chaos', body: p.body, to: [{ email: p.to }] },
    outcome,
    ...(outcome.startsWith('error_') ? {} : { provider_id: `nylas-${seq}` }),
  };
}

const entry = (e: Partial<LedgerEntry> & Pick<LedgerEntry, 'ref' | 'to'>): LedgerEntry => ({ kind: 'followup', channel: 'whatsapp', ids: {}, askedAt: T0, ...e });
const accepted = (ref: string, id = `${ref}-send`): ObservedSend => ({ ref, id, state: 'accepted', detail: 'sent' });

/** A clean run: three asks, each sent once, 7 s apart on the one pair they share. */
function cleanRun(): JudgeInput {
  seq = 0;
  return {
    seed: 17,
    durationMs: 30_000,
    faults: { process_kill: 2, provider_5xx: 3 },
    ledger: [entry({ ref: 'fu1', to: '5521900100001' }), entry({ ref: 'op2', kind: 'operator_send', to: '5521900100001' }), entry({ ref: 'nt3:email', kind: 'notification', channel: 'email', to: 'nt3@chaos.example' })],
    received: {
      meta: [meta({ to: '5521900100001', text: 'Chaos only step [fu1]', atMs: 0, entry: 'e1' }), meta({ to: '5521900100001', text: 'Chaos operator message [op2]', atMs: 7_000, entry: 'e2' })],
      nylas: [nylas({ to: 'nt3@chaos.example', body: 'Chaos notification [nt3]', atMs: 1_000 })],
      unipile: [],
    },
    sends: [accepted('fu1'), accepted('op2'), accepted('nt3:email')],
    progress: [{ ref: 'fu1', enrollmentId: 'enr-1', kind: 'followup', problem: null }],
    ambiguousListed: new Set(),
  };
}

describe('reconcile', () => {
  describe('judge', () => {
    it('counts a clean run with zero violations and no detail', () => {
      const r = judge(cleanRun());
      expect(r.violations).toEqual({ duplicates: 0, lost: 0, forbidden: 0, pacing: 0, stuck: 0, deadLetters: 0 });
      expect(r.sends).toEqual({ asks: 3, asked: 3, accepted: 3, failed: 0, cancelled: 0, ambiguous: 0 });
      expect(r.details).toEqual([]);
      expect(hasViolations(r)).toBe(false);
    });

    it('counts failed, cancelled and listed ambiguous sends as settled, not as violations', () => {
      const input = cleanRun();
      input.sends = [
        { ref: 'fu1', id: 'x1', state: 'failed', detail: '131026' },
        { ref: 'op2', id: 'x2', state: 'cancelled', detail: 'cancelled: suppressed' },
        { ref: 'nt3:email', id: 'x3', state: 'ambiguous', detail: 'ambiguous', outboxEntryId: 'entry-9' },
      ];
      input.ambiguousListed = new Set(['entry-9']);
      const r = judge(input);
      expect(r.sends).toEqual({ asks: 3, asked: 3, accepted: 0, failed: 1, cancelled: 1, ambiguous: 1 });
      expect(r.violations.lost).toBe(0);
    });

    it('finds an uncertain follow-up send in /outbox/ambiguous by its idempotency key when its message is not known', () => {
      const input = cleanRun();
      input.sends[0] = { ref: 'fu1', id: 'effect-1', state: 'ambiguous', detail: 'uncertain', idempotencyKey: 'followup:e-1:mensagem:1' };
      input.ambiguousListed = new Set(['entry-1']);
      input.ambiguousKeys = new Set(['followup:e-1:mensagem:1']);
      const r = judge(input);
      expect(r.sends.ambiguous).toBe(1);
      expect(r.violations.lost).toBe(0);
    });

    it.each([
      ['missing', { ref: 'op2', id: 'm-2', state: 'missing', detail: 'message m-2 is not in its conversation' } as ObservedSend, /lost: op2 send m-2/],
      ['ambiguous but not listed', { ref: 'op2', id: 'm-2', state: 'ambiguous', detail: 'ambiguous', outboxEntryId: 'entry-404' } as ObservedSend, /lost: op2 .*entry-404 is not listed/],
      ['uncertain and its key not listed', { ref: 'op2', id: 'effect-2', state: 'ambiguous', detail: 'uncertain', idempotencyKey: 'followup:e-2:mensagem:1' } as ObservedSend, /lost: op2 .*\(key followup:e-2:mensagem:1\) is not listed/],
    ])('counts a send that is %s as lost', (_name, send, detail) => {
      const input = cleanRun();
      input.sends[1] = send;
      const r = judge(input);
      expect(r.violations.lost).toBe(1);
      expect(r.details).toEqual([expect.stringMatching(detail)]);
      expect(hasViolations(r)).toBe(true);
    });

    it('counts a send still queued after the drain, and an enrollment that does not progress, as stuck', () => {
      const input = cleanRun();
      input.sends[0] = { ref: 'fu1', id: 'eff-1', state: 'open', detail: 'queued' };
      input.progress[0] = { ref: 'fu1', enrollmentId: 'enr-1', kind: 'followup', problem: 'active with a send still queued' };
      const r = judge(input);
      expect(r.violations.stuck).toBe(2);
      expect(r.details).toEqual(['stuck: fu1 send eff-1 still queued after the drain', 'progress: fu1 followup enrollment enr-1: active with a send still queued']);
    });
    it('counts every message parked in a dead-letter queue, each with its service, type and error', () => {
      const input = cleanRun();
      input.deadLetters = [{ service: 'outreach', event_id: 'messaging.message.sent:m-1', type: 'messaging.message.sent', reason: 'handler_failed', error: 'Connection terminated' }];
      const r = judge(input);
      expect(r.violations.deadLetters).toBe(1);
      expect(r.details).toEqual(['dead letter: outreach parked messaging.message.sent messaging.message.sent:m-1 (handler_failed): Connection terminated']);
      expect(hasViolations(r)).toBe(true);
      expect(formatReport(r)).toMatch(/dead letters\s+\|\s+1/);
    });

    it('lists the broken promises before what the drain left open, so a cut list keeps them', () => {
      const input = cleanRun();
      input.sends[1] = { ref: 'op2', id: 'eff-2', state: 'open', detail: 'queued' };
      input.ledger[0]!.stop = { kind: 'reply', at: T0 + 5_000 };
      input.received.meta.push(meta({ to: '5521900100001', text: 'Chaos second step [fu1]', atMs: 14_000, entry: 'e3' }));
      const r = judge(input);
      expect(r.details).toEqual([expect.stringMatching(/^forbidden: fu1:/), 'stuck: op2 send eff-2 still queued after the drain']);
    });
  });

  describe('duplicateSends', () => {
    it('finds one outbox entry the provider took twice', () => {
      const input = cleanRun();
      input.received.meta.push(meta({ to: '5521900100001', text: 'Chaos only step [fu1]', atMs: 20_000, entry: 'e1' }));
      const r = judge(input);
      expect(r.violations.duplicates).toBe(1);
      expect(r.details[0]).toMatch(/^duplicate: entry e1 reached the provider 2 times/);
    });

    it('finds one ask sent twice under two outbox entries (its text), and an email sent twice', () => {
      seq = 0;
      const received = {
        meta: [meta({ to: '5521900100002', text: 'Chaos first step [fu7]', atMs: 0, entry: 'a' }), meta({ to: '5521900100002', text: 'Chaos first step [fu7]', atMs: 9_000, entry: 'b' })],
        nylas: [nylas({ to: 'x@chaos.example', body: 'Hi [nt8]', atMs: 0 }), nylas({ to: 'x@chaos.example', body: 'Hi [nt8]', atMs: 8_000 })],
        unipile: [],
      };
      expect(duplicateSends(received)).toEqual([expect.stringMatching(/\[fu7\].* 2 times/), expect.stringMatching(/\[nt8\].* 2 times/)]);
    });

    it('does not count a retry after a refusal, or an attempt the provider never took, as a duplicate', () => {
      seq = 0;
      const received = {
        meta: [meta({ to: '5521900100003', text: 'T [op1]', atMs: 0, entry: 'c', outcome: 'error_131000' }), meta({ to: '5521900100003', text: 'T [op1]', atMs: 10_000, entry: 'c' })],
        nylas: [nylas({ to: 'y@chaos.example', body: 'Hi [nt2]', atMs: 0, outcome: 'error_503' }), nylas({ to: 'y@chaos.example', body: 'Hi [nt2]', atMs: 9_000 })],
        unipile: [],
      };
      expect(duplicateSends(received)).toEqual([]);
    });
  });

  describe('forbiddenSends', () => {
    it('finds a follow-up text that started after the reply that stopped it, and not the one before', () => {
      const input = cleanRun();
      input.ledger[0]!.stop = { kind: 'reply', at: T0 + 5_000 };
      input.received.meta.push(meta({ to: '5521900100001', text: 'Chaos second step [fu1]', atMs: 14_000, entry: 'e3' }));
      const r = judge(input);
      expect(r.violations.forbidden).toBe(1);
      expect(r.details).toEqual([expect.stringMatching(/^forbidden: fu1: reply acknowledged .*Chaos second step \[fu1\]/)]);
    });

    it("does not count another ask's text to the same person after a reply (a reply stops only its enrollment)", () => {
      const input = cleanRun();
      input.ledger[0]!.stop = { kind: 'reply', at: T0 + 5_000 };
      expect(forbiddenSends(input.ledger, input.received)).toEqual([]);
    });

    it('finds anything sent to an address after its opt-out, once per call even when two asks carry the opt-out', () => {
      const input = cleanRun();
      input.ledger[1]!.stop = { kind: 'opt_out', at: T0 + 3_000 };
      input.ledger.push(entry({ ref: 'nt9:whatsapp', kind: 'notification', to: '5521900100001', stop: { kind: 'opt_out', at: T0 + 3_000 } }));
      const found = forbiddenSends(input.ledger, input.received);
      expect(found).toEqual([expect.stringMatching(/^forbidden: op2: opt_out acknowledged .*\[op2\]/)]);
    });

    it('finds an email to the person whose draft was rejected', () => {
      const input = cleanRun();
      input.ledger.push(entry({ ref: 'or4', kind: 'outreach', channel: 'email', to: 'or4@prospect.example', stop: { kind: 'reject', at: T0 + 1_000 } }));
      input.received.nylas.push(nylas({ to: 'or4@prospect.example', body: 'Hello from the campaign', atMs: 5_000, grant: 'chaos-campaign-s17' }));
      expect(judge(input).details).toEqual([expect.stringMatching(/^forbidden: or4: reject acknowledged/)]);
    });

    it('lists, without counting, a send that started while the stop was still on its way to the lane', () => {
      const input = cleanRun();
      input.ledger[1]!.stop = { kind: 'opt_out', at: T0 + 5_000 };
      const r = judge(input);
      expect(r.violations.forbidden).toBe(0);
      expect(r.notJudged).toEqual([expect.stringMatching(/^raced \(within 3000 ms of the stop\): op2: opt_out acknowledged .*\(\+2000 ms\)/)]);
      expect(formatReport(r)).toContain('not judged (1):');
      expect(judge({ ...input, stopPropagationMs: 1_000 }).violations.forbidden).toBe(1);
    });
  });

  describe('pacingViolations', () => {
    it('finds two attempt starts on one pair closer than 6,500 ms, retries and refusals included', () => {
      seq = 0;
      const received = { meta: [meta({ to: '5521900100005', text: 'a', atMs: 0, outcome: 'error_131000' }), meta({ to: '5521900100005', text: 'a', atMs: 6_499 })], nylas: [], unipile: [] };
      expect(pacingViolations(received)).toEqual([expect.stringMatching(/meta:700000000000017>5521900100005 .* 6499 ms apart/)]);
    });

    it('accepts exactly 6,500 ms, other pairs in between, and read receipts (they name no recipient)', () => {
      seq = 0;
      const received = {
        meta: [meta({ to: '5521900100006', text: 'a', atMs: 0 }), meta({ to: '5521900100007', text: 'b', atMs: 100 }), meta({ to: '', text: '', atMs: 200, type: 'read' }), meta({ to: '5521900100006', text: 'c', atMs: 6_500 })],
        nylas: [nylas({ to: 'p@chaos.example', body: 'x', atMs: 0 }), nylas({ to: 'p@chaos.example', body: 'y', atMs: 1_000, grant: 'other-grant' })],
        unipile: [],
      };
      expect(pacingViolations(received)).toEqual([]);
    });

    it('finds two emails to one person from one mailbox too close', () => {
      seq = 0;
      const received = { meta: [], nylas: [nylas({ to: 'p@chaos.example', body: 'x', atMs: 0 }), nylas({ to: 'P@chaos.example', body: 'y', atMs: 2_000 })], unipile: [] };
      expect(pacingViolations(received)).toHaveLength(1);
    });
  });

  describe('formatReport', () => {
    it('prints one table with the faults by kind, the sends, the violations and the seed, then the details', () => {
      const input = cleanRun();
      input.sends[1] = { ref: 'op2', id: 'm-2', state: 'missing', detail: 'gone' };
      const text = formatReport(judge(input));
      expect(text).toMatch(/fault process_kill\s+\|\s+2/);
      expect(text).toMatch(/fault provider_5xx\s+\|\s+3/);
      expect(text).toMatch(/faults injected\s+\|\s+5/);
      expect(text).toMatch(new RegExp(`asks \\(ledger\\)\\s+\\|\\s+${input.ledger.length}\n`));
      expect(text).toMatch(/sends asked\s+\|\s+3/);
      expect(text).toMatch(/lost\s+\|\s+1/);
      expect(text).toMatch(/seed \(replay\)\s+\|\s+17/);
      expect(text).toMatch(/verdict\s+\|\s+FAIL/);
      expect(text).toContain('  - lost: op2 send m-2: gone');
    });

    it("prints the schedule's fingerprint: its hash and the asks and faults planned by kind", () => {
      const report = { ...judge(cleanRun()), schedule: { hash: '0123456789abcdef', asks: { outreach: 4, followup: 6 }, faults: { process_kill: 2 } } };
      const text = formatReport(report);
      expect(text).toMatch(/schedule hash\s+\|\s+0123456789abcdef/);
      expect(text).toContain('schedule 0123456789abcdef: asks planned 10 (followup 6, outreach 4)');
      expect(text).toContain('schedule 0123456789abcdef: faults planned 2 (process_kill 2)');
    });
  });

  describe('observeEntry (outreach)', () => {
    /** The gateway's enrollment and timeline views of one outreach ask whose draft was approved. */
    function views(action: { status: string; failure_reason: string | null; next_attempt_at?: string | null }, enrollment: Record<string, unknown> = {}): GatewayClient {
      const answers: Record<string, unknown> = {
        '/agentic/outreach/enrollments/enr-1': { status: 'active', ended_reason: null, awaiting_approval: false, next_check_at: null, ...enrollment },
        '/agentic/outreach/enrollments/enr-1/timeline': { items: [{ kind: 'action', id: 'act-1', data: { type: 'email', reject_reason: null, outcome_unknown: false, message_id: null, ...action } }] },
      };
      return { get: async (path: string) => (path in answers ? { status: 200, body: answers[path] } : { status: 404, body: null }) } as unknown as GatewayClient;
    }
    const approvedAsk = () => entry({ ref: 'or254', kind: 'outreach', channel: 'email', to: 'or254@prospect.example', ids: { enrollment_id: 'enr-1', action_id: 'act-1', contact_id: 'c-1' } });

    it('judges an approved action the daily prospect cap holds until 00:00 UTC as held, its enrollment waiting for it (not stuck)', async () => {
      // The 10-minute run of seed 1015656272: every outreach send after the mailbox's 30th of the day.
      const seen = await observeEntry(views({ status: 'approved', failure_reason: 'prospect_send_cap_reached' }), 'org-1', approvedAsk(), T0);
      expect(seen.sends).toEqual([expect.objectContaining({ ref: 'or254', state: 'cancelled', detail: expect.stringMatching(/prospect cap/) })]);
      expect(seen.progress?.problem).toBeNull();
    });

    it('still judges an approved action nothing holds as stuck, its enrollment without a next check as a progress problem', async () => {
      const seen = await observeEntry(views({ status: 'approved', failure_reason: null }), 'org-1', approvedAsk(), T0);
      expect(seen.sends).toEqual([expect.objectContaining({ state: 'open', detail: 'approved' })]);
      expect(seen.progress?.problem).toMatch(/^active, no draft awaiting review/);
    });

    it('judges needs_contact_data of a prospect whose email the workload left open as a progress problem, not a cancelled send', async () => {
      const ask = entry({ ref: 'or19', kind: 'outreach', channel: 'email', to: 'or19@prospect.example', ids: { enrollment_id: 'enr-1', contact_id: 'c-1' } });
      const parked = await observeEntry(views({ status: 'approved', failure_reason: null }, { status: 'needs_contact_data' }), 'org-1', ask, T0);
      expect(parked.progress?.problem).toMatch(/^needs_contact_data/);
      const optedOut = await observeEntry(views({ status: 'approved', failure_reason: null }, { status: 'needs_contact_data' }), 'org-1', { ...ask, stop: { kind: 'opt_out', at: T0 } }, T0);
      expect(optedOut.progress?.problem).toBeNull();
    });
  });
});
