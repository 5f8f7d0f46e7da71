import { type Answer, GatewayClient, SandboxClient } from '../../scripts/demo/http-clients.js';
import { type Address, addressKey, plain, type ReceivedCall, type StopEvent, stopWins, type Suppression, suppressed, toWireCalls, type WireCall } from '../safety/ledger.js';
import type { ChaosReport, ChaosTarget, FaultKind, LedgerEntry, ParkedMessage } from './types.js';
import { marker } from './workload.js';

/**
 * The chaos run's reconciliation (issue 17 §4): once the workload and the faults stopped, it waits
 * (bounded) until the platform is quiet, then reads what the providers received (the sandbox's
 * log of every call) and what the platform shows (its REST views of each ask of the ledger), and
 * judges:
 * - duplicates: one send reaching the person twice (two calls the provider took, for one outbox
 *   entry or one ask's text);
 * - lost: an ask with no visible outcome (no enrollment, message or delivery to show for it, an
 *   ambiguous send missing from `/outbox/ambiguous`);
 * - stuck: a send still queued or pending after the drain, or an enrollment neither ended nor
 *   waiting for a documented reason (progress);
 * - forbidden: an attempt that started after the stop the workload caused (the safety suite's
 *   `stopWins` and `suppressed` invariants, test/safety/ledger.ts);
 * - pacing: two attempt starts on one sender→recipient pair less than `PAIR_MIN_SEND_INTERVAL_MS`
 *   apart (seed 004), from the times the sandbox saw each call arrive;
 * - dead letters: any message a service parked after its retries (DESIGN §2). The workload sends
 *   nothing malformed, so every parked message is a command or event the faults made a service
 *   give up on: a step of a send or a stop that never ran, however the views look.
 * The judging is pure (`judge`), so it is unit-tested on crafted logs; `reconcile` gathers the input.
 */

/** Seed 004: two attempt starts on one sender→recipient pair at least this far apart, ms. */
export const PAIR_MIN_SEND_INTERVAL_MS = 6_500;

/** What the platform shows for one send: settled one way, still open, or nowhere to be seen. */
export type SendState = 'accepted' | 'failed' | 'cancelled' | 'ambiguous' | 'open' | 'missing';

/** One send of a ledger entry as observed through the REST API (a follow-up enrollment has one per step). */
export interface ObservedSend {
  ref: string;
  /** The platform's id of this send (effect, message, delivery, action), or the entry's ref. */
  id: string;
  state: SendState;
  /** Why: a status, a failure code, a cancel reason. */
  detail: string;
  /** The outbox entry of an ambiguous send (the message's `outbox_entry_id`), to find it in `/outbox/ambiguous`. */
  outboxEntryId?: string;
  /**
   * The idempotency key of an ambiguous send (a follow-up effect's `idempotency_key`), to find it
   * in `/outbox/ambiguous` when its message id is not known (an uncertain effect has none yet).
   */
  idempotencyKey?: string;
}

/** Whether an enrollment ended or waits for a documented reason, as its REST view shows. */
export interface ObservedProgress {
  ref: string;
  enrollmentId: string;
  kind: 'followup' | 'outreach';
  /** null when it ended or waits for a documented reason; else what is wrong. */
  problem: string | null;
}

/** Everything `judge` reads. */
export interface JudgeInput {
  seed: number;
  durationMs: number;
  faults: Partial<Record<FaultKind, number>>;
  ledger: LedgerEntry[];
  /** Every call each sandboxed provider received, as `GET /sandbox/control/{provider}/received` lists it. */
  received: { meta: ReceivedCall[]; nylas: ReceivedCall[]; unipile: ReceivedCall[] };
  sends: ObservedSend[];
  progress: ObservedProgress[];
  /** Ids of the outbox entries `/outbox/ambiguous` lists. */
  ambiguousListed: Set<string>;
  /** Idempotency keys of the outbox entries `/outbox/ambiguous` lists. */
  ambiguousKeys?: Set<string>;
  /** What the services' dead-letter queues hold after the drain (none when not read). */
  deadLetters?: ParkedMessage[];
  pairIntervalMs?: number;
  /** See `STOP_PROPAGATION_MS`. */
  stopPropagationMs?: number;
}

const at = (ms: number) => new Date(ms).toISOString().slice(11, 23);

/** A wire call that started a send attempt on a sender→recipient pair. */
interface Attempt {
  provider: string;
  seq: number;
  arrivedAt: number;
  pair: string;
}

/**
 * Attempt starts per pair from the providers' logs: Meta `messages` (not read receipts, which name
 * the inbound message they mark and no recipient), Nylas `send`, Unipile invites and messages.
 */
function attempts(received: JudgeInput['received']): Attempt[] {
  const out: Attempt[] = [];
  for (const c of received.meta) if (c.operation === 'messages' && c.context.type !== 'read' && c.outcome !== 'rejected') out.push({ provider: 'meta', seq: c.seq, arrivedAt: c.arrived_at ?? c.at, pair: `meta:${c.context.phone_number_id}>${c.context.wa_id}` });
  for (const c of received.nylas) if (c.operation === 'send' && c.outcome !== 'rejected') out.push({ provider: 'nylas', seq: c.seq, arrivedAt: c.arrived_at ?? c.at, pair: `nylas:${c.context.grant_id}>${(c.context.to ?? '').toLowerCase()}` });
  for (const c of received.unipile) if (['invite', 'chat', 'message'].includes(c.operation) && c.outcome !== 'rejected') out.push({ provider: 'unipile', seq: c.seq, arrivedAt: c.arrived_at ?? c.at, pair: `unipile:${c.context.account_id}>${c.context.provider_id}` });
  return out;
}

/** Two attempt starts on one pair closer than `intervalMs`: one detail line each. */
export function pacingViolations(received: JudgeInput['received'], intervalMs = PAIR_MIN_SEND_INTERVAL_MS): string[] {
  const byPair = new Map<string, Attempt[]>();
  for (const a of attempts(received)) byPair.set(a.pair, [...(byPair.get(a.pair) ?? []), a]);
  const out: string[] = [];
  for (const [pair, list] of byPair) {
    list.sort((x, y) => x.arrivedAt - y.arrivedAt || x.seq - y.seq);
    for (let i = 1; i < list.length; i++) {
      const gap = list[i]!.arrivedAt - list[i - 1]!.arrivedAt;
      if (gap < intervalMs) out.push(`pacing: ${pair} attempts #${list[i - 1]!.seq} at ${at(list[i - 1]!.arrivedAt)} and #${list[i]!.seq} at ${at(list[i]!.arrivedAt)} are ${gap} ms apart (< ${intervalMs})`);
    }
  }
  return out;
}

/**
 * Sends the person got twice: calls the provider took (it gave an id) grouped by the outbox entry
 * they were sent for (Meta's `biz_opaque_callback_data`) and by sender, recipient and text (every
 * ask of the workload carries its own marker, so one text is one ask). One detail per group.
 */
export function duplicateSends(received: JudgeInput['received']): string[] {
  const taken = [...toWireCalls('meta', received.meta), ...toWireCalls('nylas', received.nylas), ...toWireCalls('unipile', received.unipile)].filter((c) => c.providerId);
  const groups = new Map<string, WireCall[]>();
  const add = (key: string, c: WireCall) => groups.set(key, [...(groups.get(key) ?? []), c]);
  for (const c of taken) {
    if (c.callback) add(`entry ${c.callback}`, c);
    add(`"${short(plain(c.subject ? `${c.subject} ${c.text}` : c.text))}" from ${c.from} to ${addressKey(c.address)}`, c);
  }
  const seen = new Set<string>();
  const out: string[] = [];
  for (const [key, calls] of groups) {
    if (calls.length < 2) continue;
    const seqs = calls.map((c) => `${c.provider}#${c.seq}`).join(',');
    if (seen.has(seqs)) continue;
    seen.add(seqs);
    out.push(`duplicate: ${key} reached the provider ${calls.length} times (${calls.map((c) => `${c.provider}#${c.seq} ${c.outcome} ${c.providerId} at ${at(c.arrivedAt)}`).join('; ')})`);
  }
  return out;
}

const short = (text: string) => (text.length > 70 ? `${text.slice(0, 67)}...` : text);

/**
 * How long a stop may take to reach the send lane after the platform acknowledged it, ms: the
 * acknowledgement means messaging stored the reply or the STOP; the follow-up's cancel and the
 * suppression then travel the bus to the dispatcher, which cancels what it has not claimed yet
 * (DESIGN §5.3). The safety suite judges a stop only when it lands at least its `STOP_MARGIN_MS`
 * (3 s) before the lane could take the text; the same bound here.
 */
export const STOP_PROPAGATION_MS = 3_000;

/**
 * The stops the workload caused, as the safety suite's invariants take them, each moved
 * `shiftMs` later: an opt-out or a rejected draft forbids every later send to the address; a reply
 * forbids the later texts of that ask (its marker) — the other asks to the person are not stopped
 * by a reply.
 */
export function stopsOf(ledger: LedgerEntry[], shiftMs = 0): { stops: StopEvent[]; suppressions: Suppression[] } {
  const stops: StopEvent[] = [];
  const suppressions: Suppression[] = [];
  for (const e of ledger) {
    if (!e.stop) continue;
    const addresses: Address[] = [{ channel: e.channel, value: e.to }];
    const ackedAt = e.stop.at + shiftMs;
    if (e.stop.kind === 'reply') stops.push({ scenario: e.ref, kind: e.stop.kind, ackedAt, addresses, texts: [marker(e.ref.split(':')[0]!)] });
    else suppressions.push({ scenario: e.ref, cause: e.stop.kind, ackedAt, addresses });
  }
  return { stops, suppressions };
}

/** The safety suite's checks over the run's wire log, one line per call (an address can carry two asks' opt-outs). */
function afterStops(ledger: LedgerEntry[], log: WireCall[], shiftMs: number): Map<string, string> {
  const { stops, suppressions } = stopsOf(ledger, shiftMs);
  const out = new Map<string, string>();
  for (const v of [...stopWins(log, stops), ...suppressed(log, suppressions)]) {
    const call = v.detail.replace(/^.*?acknowledged [0-9:.]+; /, '').replace(/ \(\+\d+ ms.*$/, '');
    if (!out.has(call)) out.set(call, `${v.scenario}: ${v.detail}`);
  }
  return out;
}

/**
 * Attempts after a stop: `forbidden` started more than `propagationMs` after the stop was
 * acknowledged; `raced` started within that bound (the stop was still on its way to the lane: not
 * judged, listed).
 */
export function stopViolations(ledger: LedgerEntry[], received: JudgeInput['received'], propagationMs = STOP_PROPAGATION_MS): { forbidden: string[]; raced: string[] } {
  const log = [...toWireCalls('meta', received.meta), ...toWireCalls('nylas', received.nylas), ...toWireCalls('unipile', received.unipile)];
  const late = afterStops(ledger, log, propagationMs);
  const any = afterStops(ledger, log, 0);
  const forbidden = [...late.keys()].map((k) => `forbidden: ${any.get(k) ?? late.get(k)}`);
  const raced = [...any.entries()].filter(([k]) => !late.has(k)).map(([, d]) => `raced (within ${propagationMs} ms of the stop): ${d}`);
  return { forbidden, raced };
}

/** Attempts that started later than `propagationMs` after a stop (see `stopViolations`). */
export function forbiddenSends(ledger: LedgerEntry[], received: JudgeInput['received'], propagationMs = STOP_PROPAGATION_MS): string[] {
  return stopViolations(ledger, received, propagationMs).forbidden;
}

/** The run's table from everything gathered: counts, violations and one detail line per violation. */
export function judge(input: JudgeInput): ChaosReport {
  // Worst first: the promises (duplicate, forbidden, pacing) before what the drain left open.
  const details: string[] = [];
  const duplicates = duplicateSends(input.received);
  const { forbidden, raced } = stopViolations(input.ledger, input.received, input.stopPropagationMs);
  const pacing = pacingViolations(input.received, input.pairIntervalMs);
  details.push(...duplicates, ...forbidden, ...pacing);
  const sends = { asks: input.ledger.length, asked: input.sends.length, accepted: 0, failed: 0, cancelled: 0, ambiguous: 0 };
  let lost = 0;
  let stuck = 0;
  for (const s of input.sends) {
    if (s.state === 'accepted') sends.accepted++;
    else if (s.state === 'failed') sends.failed++;
    else if (s.state === 'cancelled') sends.cancelled++;
    else if (s.state === 'ambiguous') {
      sends.ambiguous++;
      const listed = (s.outboxEntryId !== undefined && input.ambiguousListed.has(s.outboxEntryId)) || (s.idempotencyKey !== undefined && (input.ambiguousKeys?.has(s.idempotencyKey) ?? false));
      if (!listed) {
        lost++;
        details.push(`lost: ${s.ref} send ${s.id} is ambiguous but its outbox entry ${s.outboxEntryId ?? (s.idempotencyKey ? `(key ${s.idempotencyKey})` : '(unknown)')} is not listed in /outbox/ambiguous`);
      }
    } else if (s.state === 'open') {
      stuck++;
      details.push(`stuck: ${s.ref} send ${s.id} still ${s.detail} after the drain`);
    } else {
      lost++;
      details.push(`lost: ${s.ref} send ${s.id}: ${s.detail}`);
    }
  }
  for (const p of input.progress) {
    if (!p.problem) continue;
    stuck++;
    details.push(`progress: ${p.ref} ${p.kind} enrollment ${p.enrollmentId}: ${p.problem}`);
  }
  const deadLetters = input.deadLetters ?? [];
  for (const d of deadLetters) details.push(`dead letter: ${d.service} parked ${d.type} ${d.event_id} (${d.reason ?? 'no reason'}): ${d.error ?? ''}`);
  return {
    seed: input.seed,
    durationMs: input.durationMs,
    faults: input.faults,
    sends,
    violations: { duplicates: duplicates.length, lost, forbidden: forbidden.length, pacing: pacing.length, stuck, deadLetters: deadLetters.length },
    details,
    notJudged: raced,
  };
}

/** Any violation at all (`npm run chaos` exits non-zero on it). */
export function hasViolations(r: ChaosReport): boolean {
  return Object.values(r.violations).some((n) => n > 0);
}

/**
 * The run's one table: faults by kind, sends by outcome, violations, the seed to replay; then at
 * most `maxDetails` detail lines.
 */
export function formatReport(r: ChaosReport, maxDetails = 50): string {
  const rows: Array<[string, string]> = [];
  const faultKinds = Object.entries(r.faults).filter(([, n]) => (n ?? 0) > 0) as Array<[string, number]>;
  for (const [kind, n] of faultKinds.sort(([a], [b]) => a.localeCompare(b))) rows.push([`fault ${kind}`, String(n)]);
  rows.push(['faults injected', String(faultKinds.reduce((sum, [, n]) => sum + n, 0))]);
  rows.push(['asks (ledger)', String(r.sends.asks)], ['sends asked', String(r.sends.asked)], ['  accepted', String(r.sends.accepted)], ['  failed', String(r.sends.failed)], ['  cancelled', String(r.sends.cancelled)], ['  ambiguous', String(r.sends.ambiguous)]);
  rows.push(
    ['duplicates', String(r.violations.duplicates)],
    ['lost', String(r.violations.lost)],
    ['forbidden', String(r.violations.forbidden)],
    ['pacing violations', String(r.violations.pacing)],
    ['stuck', String(r.violations.stuck)],
    ['dead letters', String(r.violations.deadLetters)],
  );
  rows.push(['duration', `${(r.durationMs / 60_000).toFixed(1)} min`], ['seed (replay)', String(r.seed)]);
  if (r.schedule) rows.push(['schedule hash', r.schedule.hash]);
  rows.push(['verdict', hasViolations(r) ? 'FAIL' : 'PASS']);
  const w0 = Math.max(...rows.map(([k]) => k.length));
  const w1 = Math.max(...rows.map(([, v]) => v.length));
  const line = `${'-'.repeat(w0)}-+-${'-'.repeat(w1)}`;
  const out = [`${'chaos run'.padEnd(w0)} | ${''.padStart(w1)}`, line, ...rows.map(([k, v]) => `${k.padEnd(w0)} | ${v.padStart(w1)}`)];
  if (r.schedule) {
    // Below the table (too wide for it): what the seed planned, to compare with a replay.
    const counts = (c: Record<string, number>) =>
      `${Object.values(c).reduce((x, y) => x + y, 0)} (${Object.entries(c)
        .sort(([x], [y]) => x.localeCompare(y))
        .map(([k, n]) => `${k} ${n}`)
        .join(', ')})`;
    out.push('', `schedule ${r.schedule.hash}: asks planned ${counts(r.schedule.asks)}`, `schedule ${r.schedule.hash}: faults planned ${counts(r.schedule.faults)}`);
  }
  if (r.details.length) {
    out.push('', `violations (${r.details.length}):`, ...r.details.slice(0, maxDetails).map((d) => `  - ${d}`));
    if (r.details.length > maxDetails) out.push(`  … and ${r.details.length - maxDetails} more`);
  }
  if (r.notJudged?.length) {
    out.push('', `not judged (${r.notJudged.length}):`, ...r.notJudged.slice(0, maxDetails).map((d) => `  - ${d}`));
    if (r.notJudged.length > maxDetails) out.push(`  … and ${r.notJudged.length - maxDetails} more`);
  }
  return out.join('\n');
}

// ---------------------------------------------------------------------------------------------
// Gathering: the platform's REST views and the sandbox's logs.

const LIVE_FOLLOWUP = new Set(['active', 'waiting_reply', 'dormente', 'paused_handoff', 'paused_manual']);
const OPEN_EFFECT = new Set(['queued', 'pending', 'awaiting_decision', 'approved']);
const ACCEPTED_MESSAGE = new Set(['sent', 'delivered', 'read']);
/** The failure reason of an outreach action the daily prospect cap sent back to approved (outreach's HOLDS). */
const PROSPECT_CAP_HOLD = 'prospect_send_cap_reached';

/** Answers a GET, repeated through the faults' 5xx and dropped connections (the run is over, they are not). */
async function get(client: GatewayClient, path: string, tries = 5): Promise<Answer | undefined> {
  for (let i = 0; i < tries; i++) {
    try {
      const a = await client.get(path);
      if (a.status < 500) return a;
    } catch {
      // The next try tells.
    }
    await new Promise((resolve) => setTimeout(resolve, 500 * (i + 1)));
  }
  return undefined;
}

/** What the REST views show of one ledger entry: its sends and, for enrollments, its progress. */
export async function observeEntry(gateway: GatewayClient, organizationId: string, e: LedgerEntry, now = Date.now()): Promise<{ sends: ObservedSend[]; progress?: ObservedProgress }> {
  const one = (state: SendState, detail: string, id = e.ref, outboxEntryId?: string): { sends: ObservedSend[] } => ({ sends: [{ ref: e.ref, id, state, detail, ...(outboxEntryId ? { outboxEntryId } : {}) }] });
  const refusal = e.ids.refused;
  if (refusal && /^HTTP 4/.test(refusal)) return one('failed', `refused at the API: ${refusal}`);
  if (e.kind === 'followup') {
    let enrollmentId: string | undefined = e.ids.enrollment_id;
    if (!enrollmentId && e.ids.contact_id) {
      // The ask went unanswered: the operation key may still have enrolled the contact.
      const list = await get(gateway, `/ai/followups/enrollments?customer_id=${organizationId}&contact_id=${e.ids.contact_id}`);
      enrollmentId = (list?.body?.data?.data as Array<{ id: string; flow_id: string }> | undefined)?.find((x) => x.flow_id === e.ids.flow_id)?.id;
      if (!enrollmentId) return one('cancelled', `never enrolled (the ask went unanswered: ${refusal ?? 'no answer'}; no enrollment exists)`);
    }
    if (!enrollmentId) return one('missing', 'no enrollment id and no contact to look it up');
    const view = await get(gateway, `/ai/followups/enrollments/${enrollmentId}?customer_id=${organizationId}`);
    if (view?.status !== 200) return one('missing', `GET enrollment ${enrollmentId}: ${view?.status ?? 'no answer'}`);
    const enrollment = view.body.data.enrollment as { status: string; reason?: string | null; next_run_at?: string | null };
    const effects = (view.body.data.effects as Array<{ id: string; kind: string; status: string; reason?: string | null; message_id?: string | null; idempotency_key?: string | null }>).filter((x) => x.kind === 'send');
    const sends: ObservedSend[] = [];
    for (const f of effects) {
      if (f.status === 'sent') sends.push({ ref: e.ref, id: f.id, state: 'accepted', detail: 'sent' });
      else if (f.status === 'failed') sends.push({ ref: e.ref, id: f.id, state: 'failed', detail: f.reason ?? 'failed' });
      else if (['cancelled', 'skipped', 'rejected', 'done'].includes(f.status)) sends.push({ ref: e.ref, id: f.id, state: 'cancelled', detail: `${f.status}: ${f.reason ?? 'no reason'}` });
      else if (f.status === 'uncertain') {
        const m = f.message_id && e.ids.conversation_id ? await messageIn(gateway, e.ids.conversation_id, f.message_id) : undefined;
        sends.push({ ref: e.ref, id: f.id, state: 'ambiguous', detail: 'uncertain', ...(m?.outbox_entry_id ? { outboxEntryId: m.outbox_entry_id } : {}), ...(f.idempotency_key ? { idempotencyKey: f.idempotency_key } : {}) });
      } else sends.push({ ref: e.ref, id: f.id, state: 'open', detail: f.status });
    }
    const live = LIVE_FOLLOWUP.has(enrollment.status);
    if (!effects.length) sends.push({ ref: e.ref, id: enrollmentId, state: live ? 'open' : 'cancelled', detail: live ? `enrollment ${enrollment.status} with no send yet` : `enrollment ${enrollment.status} before any send (${enrollment.reason ?? 'no reason'})` });
    let problem: string | null = null;
    const openEffect = effects.some((f) => OPEN_EFFECT.has(f.status));
    if (!live && enrollment.status === 'dead' && !enrollment.reason) problem = 'dead without a reason';
    else if (live && !['paused_handoff', 'paused_manual', 'waiting_reply'].includes(enrollment.status)) {
      const next = enrollment.next_run_at ? Date.parse(enrollment.next_run_at) : NaN;
      if (openEffect) problem = `${enrollment.status} with a send still ${effects.find((f) => OPEN_EFFECT.has(f.status))!.status}`;
      else if (!(next > now)) problem = `${enrollment.status} but its next run (${enrollment.next_run_at ?? 'none'}) is not in the future`;
    }
    return { sends, progress: { ref: e.ref, enrollmentId, kind: 'followup', problem } };
  }
  if (e.kind === 'operator_send') {
    if (!e.ids.message_id) return one('missing', `no message id (${refusal ?? 'no answer'})`);
    const m = e.ids.conversation_id ? await messageIn(gateway, e.ids.conversation_id, e.ids.message_id) : undefined;
    return messageState(e, m, e.ids.message_id);
  }
  if (e.kind === 'notification') {
    if (!e.ids.notification_id) {
      const list = await get(gateway, `/notifications?contact_id=${e.ids.contact_id}`);
      const found = (list?.body?.items as Array<{ id: string; body: string }> | undefined)?.find((n) => n.body.includes(marker(e.ref.split(':')[0]!)));
      if (!found) return one('cancelled', `never created (the ask went unanswered: ${refusal ?? 'no answer'}; no notification exists)`);
      e.ids.notification_id = found.id;
    }
    const view = await get(gateway, `/notifications/${e.ids.notification_id}`);
    if (view?.status !== 200) return one('missing', `GET notification ${e.ids.notification_id}: ${view?.status ?? 'no answer'}`);
    const d = (view.body.deliveries as Array<{ id: string; channel: string; status: string; message_id: string | null; error_code: string | null }>).find((x) => x.channel === e.channel);
    if (!d) return one('missing', `notification ${e.ids.notification_id} has no ${e.channel} delivery`);
    if (d.status === 'sent') return one('accepted', 'sent', d.id);
    if (d.status === 'failed') return one('failed', d.error_code ?? 'failed', d.id);
    if (d.status === 'skipped') return one('cancelled', `skipped: ${d.error_code ?? 'no reason'}`, d.id);
    // Pending: the message says whether it waits in the outbox or its outcome is unknown.
    const m = d.message_id ? await messageOf(gateway, e.ids.contact_id!, d.message_id) : undefined;
    if (m?.status === 'ambiguous') return one('ambiguous', 'ambiguous', d.id, m.outbox_entry_id ?? undefined);
    return one('open', `pending (message ${d.message_id ?? 'none'} ${m?.status ?? ''})`.trim(), d.id);
  }
  // Outreach: the enrollment, and the action the workload approved or rejected, from its timeline.
  if (!e.ids.enrollment_id) return one('failed', `not enrolled: ${refusal ?? 'no answer'}`);
  const view = await get(gateway, `/agentic/outreach/enrollments/${e.ids.enrollment_id}`);
  if (view?.status !== 200) return one('missing', `GET outreach enrollment ${e.ids.enrollment_id}: ${view?.status ?? 'no answer'}`);
  const enrollment = view.body as { status: string; ended_reason: string | null; awaiting_approval: boolean; next_check_at: string | null };
  let problem: string | null = null;
  if (enrollment.status === 'active' && !enrollment.awaiting_approval && !(enrollment.next_check_at && Date.parse(enrollment.next_check_at) > now)) problem = `active, no draft awaiting review and its next check (${enrollment.next_check_at ?? 'none'}) not in the future`;
  if (enrollment.status === 'ended' && !enrollment.ended_reason) problem = 'ended without a reason';
  // The workload's prospects all have an open email address, and an opt-out ends the enrollment: a
  // needs_contact_data the run did not cause is a transient failure parked as missing data.
  if (enrollment.status === 'needs_contact_data' && !e.stop) problem = 'needs_contact_data, but the workload left its email address open';
  const progress: ObservedProgress = { ref: e.ref, enrollmentId: e.ids.enrollment_id, kind: 'outreach', problem };
  if (!e.ids.action_id) {
    // No draft reached the workload's review: settled when the enrollment ended, has a draft waiting
    // for a person, or waits for its next check (a decision that failed for good asks again in a day).
    const waits = enrollment.status === 'active' && !enrollment.awaiting_approval && !problem;
    const state: SendState = enrollment.status === 'active' && !enrollment.awaiting_approval && !waits ? 'open' : 'cancelled';
    const why = waits ? `, waiting for its next check at ${enrollment.next_check_at}` : enrollment.ended_reason ? `, ${enrollment.ended_reason}` : '';
    return { sends: [{ ref: e.ref, id: e.ids.enrollment_id, state, detail: `no draft reviewed (enrollment ${enrollment.status}${why})` }], progress };
  }
  const timeline = await get(gateway, `/agentic/outreach/enrollments/${e.ids.enrollment_id}/timeline`);
  const action = (timeline?.body?.items as Array<{ id: string; kind: string; data: { status: string; failure_reason?: string | null; reject_reason?: string | null; outcome_unknown?: boolean; message_id?: string | null } }> | undefined)?.find(
    (i) => i.kind === 'action' && i.id === e.ids.action_id,
  );
  if (!action) return { sends: [{ ref: e.ref, id: e.ids.action_id, state: 'missing', detail: 'the action is not on the enrollment timeline' }], progress };
  const a = action.data;
  const send = (state: SendState, detail: string): { sends: ObservedSend[]; progress: ObservedProgress } => ({ sends: [{ ref: e.ref, id: e.ids.action_id!, state, detail }], progress });
  // The daily prospect cap (seed 003 §6) refused the send at the wire and nothing left: the action is
  // approved again with its next attempt at 00:00 UTC (outreach's hold), and its enrollment waits for
  // that attempt, not for a next check. A hold the platform documents, so neither stuck nor lost; the
  // workload raises the cap (WorkloadRunner.setup), so a run that shows it did not apply that.
  if (a.status === 'approved' && a.failure_reason === PROSPECT_CAP_HOLD) {
    return { sends: [{ ref: e.ref, id: e.ids.action_id, state: 'cancelled', detail: 'held by the daily prospect cap until 00:00 UTC (approved, nothing sent)' }], progress: { ...progress, problem: null } };
  }
  if (a.status === 'executed') return send('accepted', 'executed');
  if (a.status === 'failed' && a.outcome_unknown) {
    const m = a.message_id ? await messageOf(gateway, e.ids.contact_id!, a.message_id) : undefined;
    return { sends: [{ ref: e.ref, id: e.ids.action_id, state: 'ambiguous', detail: `failed, outcome unknown (${a.failure_reason ?? ''})`, ...(m?.outbox_entry_id ? { outboxEntryId: m.outbox_entry_id } : {}) }], progress };
  }
  if (a.status === 'failed') return send('failed', a.failure_reason ?? 'failed');
  if (a.status === 'rejected' || a.status === 'invalidated') return send('cancelled', `${a.status}: ${a.reject_reason ?? a.failure_reason ?? 'no reason'}`);
  // pending_approval is an ask the workload never decided (its approve or reject went unanswered): it waits for a person.
  if (a.status === 'pending_approval' && (e.ids.approve_answer || e.ids.reject_answer)) return send('cancelled', `still awaiting review (the workload's decision went unanswered: ${e.ids.approve_answer ?? e.ids.reject_answer})`);
  return send('open', a.status);
}

interface MessageView {
  id: string;
  status: string;
  error_code: string | null;
  outbox_entry_id?: string | null;
}

function messageState(e: LedgerEntry, m: MessageView | undefined, id: string): { sends: ObservedSend[] } {
  const s = (state: SendState, detail: string, outboxEntryId?: string) => ({ sends: [{ ref: e.ref, id, state, detail, ...(outboxEntryId ? { outboxEntryId } : {}) }] });
  if (!m) return s('missing', `message ${id} is not in its conversation`);
  if (ACCEPTED_MESSAGE.has(m.status)) return s('accepted', m.status);
  if (m.status === 'failed') return s('failed', m.error_code ?? 'failed');
  if (m.status === 'cancelled') return s('cancelled', `cancelled: ${m.error_code ?? 'no reason'}`);
  if (m.status === 'ambiguous') return s('ambiguous', 'ambiguous', m.outbox_entry_id ?? undefined);
  return s('open', m.status);
}

async function messageIn(gateway: GatewayClient, conversationId: string, messageId: string): Promise<MessageView | undefined> {
  let cursor: string | undefined;
  for (let page = 0; page < 10; page++) {
    const a = await get(gateway, `/conversations/${conversationId}/messages?limit=200${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`);
    const found = (a?.body?.items as MessageView[] | undefined)?.find((m) => m.id === messageId);
    if (found) return found;
    cursor = a?.body?.next_cursor ?? undefined;
    if (!cursor) return undefined;
  }
  return undefined;
}

/** A message of the contact, in whichever of its conversations it is. */
async function messageOf(gateway: GatewayClient, contactId: string, messageId: string): Promise<MessageView | undefined> {
  const conversations = await get(gateway, `/conversations?contact_id=${contactId}`);
  for (const c of (conversations?.body?.items ?? []) as Array<{ id: string }>) {
    const m = await messageIn(gateway, c.id, messageId);
    if (m) return m;
  }
  return undefined;
}

/** Ids and idempotency keys of every outbox entry `/outbox/ambiguous` lists. */
async function ambiguousListed(gateway: GatewayClient): Promise<{ ids: Set<string>; keys: Set<string> }> {
  const out = { ids: new Set<string>(), keys: new Set<string>() };
  let cursor: string | undefined;
  for (let page = 0; page < 100; page++) {
    const a = await get(gateway, `/outbox/ambiguous?limit=200${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`);
    for (const item of (a?.body?.items ?? []) as Array<{ id: string; idempotency_key: string }>) {
      out.ids.add(item.id);
      out.keys.add(item.idempotency_key);
    }
    cursor = a?.body?.next_cursor ?? undefined;
    if (!cursor) break;
  }
  return out;
}

/** The providers' logs, read on from the last call seen (`since_seq`), so a long run's log is fetched once. */
class ReceivedLogs {
  readonly calls: JudgeInput['received'] = { meta: [], nylas: [], unipile: [] };

  constructor(private readonly sandbox: SandboxClient) {}

  /** Reads the calls made since the last read; answers how many there were. */
  async readNew(): Promise<number> {
    let added = 0;
    for (const provider of ['meta', 'nylas', 'unipile'] as const) {
      const list = this.calls[provider];
      const since = list.length ? list[list.length - 1]!.seq : 0;
      const answer = await this.sandbox.request('GET', `/sandbox/control/${provider}/received?since_seq=${since}`);
      const fresh = (answer.body?.calls ?? []) as ReceivedCall[];
      list.push(...fresh);
      added += fresh.length;
    }
    return added;
  }
}

/** Runs `fn` over `items`, `limit` at a time. */
async function each<T, R>(items: T[], limit: number, fn: (item: T) => Promise<R>): Promise<R[]> {
  const out: R[] = new Array(items.length);
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(limit, items.length) }, async () => {
      while (next < items.length) {
        const i = next++;
        out[i] = await fn(items[i]!);
      }
    }),
  );
  return out;
}

/** How long the providers' logs must stay unchanged, with nothing open, for the platform to count as quiet, ms. */
const QUIET_MS = 5_000;

/**
 * Waits until the platform is quiet — every ledger send settled (accepted, failed, cancelled or
 * ambiguous) and no new call at any provider for `QUIET_MS` — or `drainTimeoutMs` passed; then
 * judges the run. Entries already settled are not read again while it waits.
 */
export async function reconcile(target: ChaosTarget, ledger: LedgerEntry[], opts: { drainTimeoutMs: number; faults: Partial<Record<FaultKind, number>>; durationMs: number; log?: (s: string) => void; deadLetters?: () => Promise<ParkedMessage[]> }): Promise<ChaosReport> {
  const gateway = new GatewayClient(target.gatewayUrl, target.apiKey);
  const sandbox = new SandboxClient(target.sandboxUrl);
  const deadline = Date.now() + opts.drainTimeoutMs;
  const observed = new Map<string, { sends: ObservedSend[]; progress?: ObservedProgress }>();
  const settled = (o: { sends: ObservedSend[]; progress?: ObservedProgress } | undefined) => o !== undefined && o.sends.every((s) => s.state !== 'open') && !o.progress?.problem;
  const logs = new ReceivedLogs(sandbox);
  let quietSince = Date.now();
  for (;;) {
    const pending = ledger.filter((e) => !settled(observed.get(e.ref)));
    const seen = await each(pending, 6, (e) => observeEntry(gateway, target.organizationId, e).catch((err: Error) => ({ sends: [{ ref: e.ref, id: e.ref, state: 'missing' as const, detail: `could not read it: ${err.message}` }] })));
    pending.forEach((e, i) => observed.set(e.ref, seen[i]!));
    // A sandbox that does not answer is not quiet either.
    if ((await logs.readNew().catch(() => 1)) > 0) quietSince = Date.now();
    const open = ledger.filter((e) => !settled(observed.get(e.ref))).length;
    if (open === 0 && Date.now() - quietSince >= QUIET_MS) break;
    if (Date.now() > deadline) {
      opts.log?.(`chaos reconcile: drain bound (${opts.drainTimeoutMs} ms) reached with ${open} asks not settled`);
      break;
    }
    await new Promise((resolve) => setTimeout(resolve, 2_000));
  }
  const all = ledger.map((e) => observed.get(e.ref)!);
  for (const send of all.flatMap((o) => o.sends)) if (send.state === 'failed' || send.state === 'ambiguous') opts.log?.(`chaos reconcile: ${send.ref} send ${send.id} ${send.state}: ${send.detail}`);
  await logs.readNew();
  const listed = await ambiguousListed(gateway);
  const deadLetters = (await opts.deadLetters?.()) ?? [];
  const report = judge({
    seed: target.seed,
    durationMs: opts.durationMs,
    faults: opts.faults,
    ledger,
    received: logs.calls,
    sends: all.flatMap((o) => o.sends),
    progress: all.flatMap((o) => (o.progress ? [o.progress] : [])),
    ambiguousListed: listed.ids,
    ambiguousKeys: listed.keys,
    deadLetters,
  });
  // What the platform recorded of each stopped follow-up that broke its stop: when it ended, and its sends' times.
  for (const e of ledger) {
    const row = report.details.findIndex((d) => d.startsWith(`forbidden: ${e.ref}:`));
    if (e.kind !== 'followup' || !e.ids.enrollment_id || row < 0) continue;
    const view = await get(gateway, `/ai/followups/enrollments/${e.ids.enrollment_id}?customer_id=${target.organizationId}`);
    const data = view?.body?.data as { enrollment: Record<string, unknown>; effects: Array<Record<string, unknown>> } | undefined;
    if (!data) continue;
    const sends = data.effects.filter((f) => f.kind === 'send').map((f) => `${String(f.id).slice(0, 8)} ${f.status} created ${f.created_at} updated ${f.updated_at}`);
    // Under its violation line, so it stays beside it when the list is cut.
    report.details.splice(row + 1, 0, `  ${e.ref}: enrollment ${e.ids.enrollment_id} ${data.enrollment.status} (${data.enrollment.reason ?? ''}) finished ${data.enrollment.finished_at ?? '-'} updated ${data.enrollment.updated_at ?? '-'}; sends: ${sends.join('; ')}`);
  }
  return report;
}
