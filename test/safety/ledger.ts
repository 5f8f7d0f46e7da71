import type { SandboxClient } from '../../scripts/demo/http-clients.js';

/** An address a message can go to, keyed as the wire shows it (WhatsApp digits, email lower case, LinkedIn member id). */

/** The fields of a Meta message request (text, template, interactive or media with a caption) the ledger reads. */
type MetaMessageBody = Record<string, unknown> & { type?: string; text?: { body?: string }; template?: { name?: string }; interactive?: { body?: { text?: string } } };
export interface Address {
  channel: 'whatsapp' | 'email' | 'linkedin';
  value: string;
}

export const addressKey = (a: Address) => `${a.channel}:${a.channel === 'email' ? a.value.toLowerCase() : a.channel === 'whatsapp' ? a.value.replace(/\D/g, '') : a.value}`;

/** One message that reached a sandboxed provider (a send, not a read receipt or a read of headers). */
export interface WireCall {
  provider: 'meta' | 'nylas' | 'unipile';
  seq: number;
  /** Epoch ms the request reached the sandbox (before any scripted hold): its attempt had started. */
  arrivedAt: number;
  address: Address;
  /** Grant (Nylas), phone-number id (Meta) or account (Unipile) it left from. */
  from: string;
  text: string;
  subject: string | null;
  outcome: string;
  /** The id the provider gave the message, when it took it (the person got it). */
  providerId?: string;
  /** Meta's `biz_opaque_callback_data`: the outbox entry id the dispatcher sent it for. */
  callback?: string;
}

/** One call as the sandbox's `GET /sandbox/control/{provider}/received` lists it. */
export interface ReceivedCall {
  seq: number;
  at: number;
  arrived_at?: number;
  operation: string;
  context: Record<string, string>;
  body?: Record<string, unknown> | null;
  outcome: string;
  provider_id?: string;
}

/** Every message send the sandbox received, in one list (read receipts and provider reads left out). */
export async function wireLog(sandbox: SandboxClient): Promise<WireCall[]> {
  const out: WireCall[] = [];
  for (const provider of ['meta', 'nylas', 'unipile'] as const) {
    const answer = await sandbox.request('GET', `/sandbox/control/${provider}/received`);
    out.push(...toWireCalls(provider, (answer.body?.calls ?? []) as ReceivedCall[]));
  }
  return out;
}

/** The message sends among one provider's received calls (read receipts, provider reads and rejected requests left out). */
export function toWireCalls(provider: WireCall['provider'], calls: ReceivedCall[]): WireCall[] {
  const out: WireCall[] = [];
  for (const call of calls) {
    if (call.outcome === 'rejected') continue;
    const arrivedAt = call.arrived_at ?? call.at;
    const common = { provider, seq: call.seq, arrivedAt, outcome: call.outcome, ...(call.provider_id ? { providerId: call.provider_id } : {}) };
    if (provider === 'meta') {
      if (call.operation !== 'messages' || call.context.type === 'read') continue;
      const b = (call.body ?? {}) as MetaMessageBody;
      const text = b.text?.body ?? b.template?.name ?? b.interactive?.body?.text ?? (b.type ? (b[b.type] as { caption?: string } | undefined) : undefined)?.caption ?? '';
      const callback = call.context.biz_opaque_callback_data;
      out.push({ ...common, address: { channel: 'whatsapp', value: call.context.wa_id ?? '' }, from: call.context.phone_number_id ?? '', text: String(text), subject: null, ...(callback ? { callback } : {}) });
    } else if (provider === 'nylas') {
      if (call.operation !== 'send') continue;
      out.push({ ...common, address: { channel: 'email', value: (call.context.to ?? '').toLowerCase() }, from: call.context.grant_id ?? '', text: String(call.body?.body ?? ''), subject: (call.body?.subject as string | undefined) ?? null });
    } else {
      if (!['invite', 'chat', 'message'].includes(call.operation)) continue;
      out.push({ ...common, address: { channel: 'linkedin', value: call.context.provider_id ?? '' }, from: call.context.account_id ?? '', text: String(call.body?.text ?? call.body?.message ?? ''), subject: null });
    }
  }
  return out;
}

/**
 * A stop event, recorded when the platform acknowledged it (the webhook's 2xx, the REST answer).
 * `forbids` says which later sends to the person it rules out: every automation text of the
 * scenario (a reply, a handoff, a resolution, an erasure), or everything (an opt-out: see
 * suppressions).
 */
export interface StopEvent {
  scenario: string;
  kind: string;
  ackedAt: number;
  addresses: Address[];
  /** The automation texts that must not start a wire attempt after `ackedAt`. */
  texts: string[];
  /** When the send lane could first have taken the text (epoch ms), for a violation's detail. */
  lanePickup?: number | null;
  /**
   * The number (Meta phone-number id) whose earlier send to the person holds the text, when the
   * scenario counts on one (pair pacing, a slow provider call): the hold is per number and person,
   * so the texts must leave from it, or nothing held them and the scenario proved nothing.
   */
  heldOn?: string;
}

/** An address on the do-not-contact list from `ackedAt` on: nothing may go to it, whoever asks. */
export interface Suppression {
  scenario: string;
  cause: string;
  ackedAt: number;
  addresses: Address[];
}

/** One approved outreach message: what the approver saw and approved. */
export interface Approval {
  scenario: string;
  actionId: string;
  /** Grant of the campaign's mailbox (only outreach sends from it). */
  grant: string;
  to: string;
  subject: string | null;
  body: string;
  /** Every address the person had or was given in the scenario (to attribute a send to this approval). */
  personAddresses: string[];
}

/** A violation found by an invariant, with what the wire (or the API) showed. */
export interface Violation {
  invariant: string;
  scenario: string;
  detail: string;
}

export const INVARIANTS = {
  stopWins: 'after a stop is acknowledged, no later automation attempt to that person',
  suppressed: 'nothing sent to a suppressed address, by any caller',
  approvedOnly: 'outreach sends only approved text, to the approved address, once per approval',
  oneLive: 'one live outreach enrollment per person across campaigns',
  autoReplyInert: 'an auto-reply never stops, opts out or interrupts anything',
} as const;
export type InvariantName = keyof typeof INVARIANTS;

/** What the scenarios did, and the checks that read it against the wire. */
export class Ledger {
  readonly stops: StopEvent[] = [];
  readonly suppressions: Suppression[] = [];
  readonly approvals: Approval[] = [];
  /** Outreach grants whose every send must be an approval. */
  readonly outreachGrants = new Set<string>();
  /** Violations found through the API (enrollments, auto-replies), and barriers that never settled. */
  readonly observed: Violation[] = [];
  /**
   * Scenarios whose stop did not land inside the window they meant to test (a loaded machine made
   * the set-up slower than the window): not judged by `stopWins`, listed with the table.
   */
  readonly missed: string[] = [];
  /** Scenarios run per invariant. */
  readonly runs: Record<InvariantName, Set<string>> = { stopWins: new Set(), suppressed: new Set(), approvedOnly: new Set(), oneLive: new Set(), autoReplyInert: new Set() };

  ran(invariant: InvariantName, scenario: string): void {
    this.runs[invariant].add(scenario);
  }

  stop(event: StopEvent): void {
    this.stops.push(event);
    this.ran('stopWins', event.scenario);
  }

  suppress(s: Suppression): void {
    this.suppressions.push(s);
    this.ran('suppressed', s.scenario);
  }

  approve(a: Approval): void {
    this.approvals.push(a);
    this.outreachGrants.add(a.grant);
    this.ran('approvedOnly', a.scenario);
  }

  violation(invariant: InvariantName, scenario: string, detail: string): void {
    this.ran(invariant, scenario);
    this.observed.push({ invariant, scenario, detail });
  }

  /** Every invariant over the wire log, plus what the API showed. */
  check(log: WireCall[]): Violation[] {
    return [...stopWins(log, this.stops), ...suppressed(log, this.suppressions), ...approvedOnly(log, this.approvals, this.outreachGrants), ...this.observed];
  }

  table(violations: Violation[]): string {
    const rows = (Object.keys(INVARIANTS) as InvariantName[]).map((name) => [INVARIANTS[name], String(this.runs[name].size), String(violations.filter((v) => v.invariant === name).length)]);
    const head = ['invariant', 'scenarios', 'violations'];
    const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
    const line = (cells: string[]) => cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join(' | ');
    const missed = this.missed.length ? [`timing missed (not judged): ${this.missed.length}`, ...this.missed.map((m) => `  - ${m}`)] : [];
    return [line(head), widths.map((w) => '-'.repeat(w)).join('-|-'), ...rows.map(line), ...missed].join('\n');
  }
}

/** Text of an HTML email body or a plain one, for comparing what was approved with what was sent. */
export function plain(text: string): string {
  return text
    .replace(/<br\s*\/?>/gi, ' ')
    .replace(/<[^>]+>/g, ' ')
    .replace(/&(amp|lt|gt|quot|#39|nbsp);/g, (_, e: string) => ({ amp: '&', lt: '<', gt: '>', quot: '"', '#39': "'", nbsp: ' ' })[e]!)
    .replace(/\s+/g, ' ')
    .trim();
}

const short = (text: string) => (text.length > 60 ? `${text.slice(0, 57)}...` : text);
const at = (ms: number) => new Date(ms).toISOString().slice(11, 23);

/**
 * Automation texts to a stopped person whose attempt started after the stop was acknowledged; and,
 * for a stop that counts on a hold (`heldOn`), any of its texts that left from another number: the
 * hold is per number and person, so such a text was never held and the window was never tested.
 */
export function stopWins(log: WireCall[], stops: StopEvent[]): Violation[] {
  const out: Violation[] = [];
  for (const stop of stops) {
    const keys = new Set(stop.addresses.map(addressKey));
    for (const call of log) {
      if (!keys.has(addressKey(call.address)) || !stop.texts.some((t) => call.text.includes(t))) continue;
      if (stop.heldOn && call.provider === 'meta' && call.from !== stop.heldOn) {
        out.push({ invariant: 'stopWins', scenario: stop.scenario, detail: `"${short(call.text)}" left from number ${call.from} at ${at(call.arrivedAt)}, not from ${stop.heldOn} (the number the person wrote to, whose send was to hold it): nothing held it` });
      }
      if (call.arrivedAt <= stop.ackedAt) continue;
      out.push({
        invariant: 'stopWins',
        scenario: stop.scenario,
        detail: `${stop.kind} acknowledged ${at(stop.ackedAt)}; ${call.provider} got "${short(call.text)}" for ${addressKey(call.address)} at ${at(call.arrivedAt)} (+${call.arrivedAt - stop.ackedAt} ms, ${call.outcome}${stop.lanePickup ? `; the lane could take it from ${at(stop.lanePickup)}` : ''})`,
      });
    }
  }
  return out;
}

/** Any send to a suppressed address that started after the suppression was acknowledged. */
export function suppressed(log: WireCall[], suppressions: Suppression[]): Violation[] {
  const out: Violation[] = [];
  for (const s of suppressions) {
    const keys = new Set(s.addresses.map(addressKey));
    for (const call of log) {
      if (!keys.has(addressKey(call.address)) || call.arrivedAt <= s.ackedAt) continue;
      out.push({ invariant: 'suppressed', scenario: s.scenario, detail: `${s.cause} acknowledged ${at(s.ackedAt)}; ${call.provider} got "${short(call.text)}" for ${addressKey(call.address)} at ${at(call.arrivedAt)} (+${call.arrivedAt - s.ackedAt} ms)` });
    }
  }
  return out;
}

/**
 * Every send from an outreach mailbox is one approval's text to that approval's address, and no
 * approval is sent twice (an ambiguous attempt that the provider took counts as sent).
 */
export function approvedOnly(log: WireCall[], approvals: Approval[], grants: Set<string>): Violation[] {
  const out: Violation[] = [];
  const used = new Map<string, number>();
  for (const call of log) {
    if (call.provider !== 'nylas' || !grants.has(call.from) || call.outcome === 'drop') continue;
    const sent = plain(call.text);
    const sameText = approvals.filter((a) => a.grant === call.from && sent.includes(plain(a.body)) && (a.subject === null || call.subject === a.subject));
    const match = sameText.find((a) => a.to.toLowerCase() === call.address.value);
    if (!match) {
      const owner = approvals.find((a) => a.grant === call.from && a.personAddresses.some((x) => x.toLowerCase() === call.address.value));
      out.push({
        invariant: 'approvedOnly',
        scenario: owner?.scenario ?? 'outreach',
        detail: owner ? `action ${owner.actionId} approved for ${owner.to} but "${short(call.subject ?? call.text)}" went to ${call.address.value}` : `no approval for "${short(call.subject ?? call.text)}" to ${call.address.value}`,
      });
      continue;
    }
    used.set(match.actionId, (used.get(match.actionId) ?? 0) + 1);
  }
  for (const a of approvals) if ((used.get(a.actionId) ?? 0) > 1) out.push({ invariant: 'approvedOnly', scenario: a.scenario, detail: `action ${a.actionId} sent ${used.get(a.actionId)} times` });
  return out;
}
