import { Injectable } from '@nestjs/common';
import { CommitBatch, isUuid, type Tx } from '@touchpoint/database';
import type { NewEnrollmentEvent } from '../enrollments/enrollment-row.js';
import { FollowupsMetrics } from '../metrics/followups.metrics.js';
import { type EnrollmentSendWrite, type ReportedEffect, type SavedSend, SendReportsRepository } from './send-reports.repository.js';

/** A send's outcome as followups records it on the effect. */
export type SendOutcome = 'sent' | 'failed' | 'cancelled' | 'uncertain';

/** A provider's delivery report that followups keeps on the effect (messaging's `delivered` and `read`). */
export type DeliveryReport = 'delivered' | 'read';

/** One report about a follow-up send, by the idempotency key messaging and the dispatcher carry unchanged. */
export type SendReport = { organizationId: string; key: string; at: Date; messageId?: string | null } & ({ kind: 'outcome'; outcome: SendOutcome; errorCode?: string | null } | { kind: 'delivery'; report: DeliveryReport });

/** A locked effect with what the reports of this batch changed on it. */
interface Working {
  effect: ReportedEffect;
  dirty: boolean;
  setAt: Date | null;
  floorAt: Date | null;
}

/**
 * Applies the reports about follow-up sends (seed 002 "Efeitos": the effect's status) to their
 * send effects and enrollments, a batch at a time: the effects of a batch are locked in one
 * statement, and the effects, the enrollments and the enrollment events written in one more
 * (`SendReportsRepository.write`), however many reports the batch has (a consumer batch of messaging's and the dispatcher's
 * events; `applyLater`). The rules are those of one report, applied in the order given:
 *
 * - an outcome moves the effect forward: queued → sent | failed | cancelled | uncertain; uncertain
 *   → sent | failed | cancelled; the send in flight on the enrollment settles (`dispatch_busy`
 *   clears once the outcome is final). A late or repeated outcome changes nothing but may name
 *   the message the effect lacks.
 * - a delivery report (`delivered`, `read`) sets its timestamp on the effect once and proves the
 *   send left, so an effect still `queued` or `uncertain` becomes `sent`; the enrollment's
 *   `last_send_status` moves only up (sent → delivered → read) and only for its newest send. A
 *   failed or cancelled send is never revived by a stale report.
 */
@Injectable()
export class SendReportsService {
  private readonly batch = new CommitBatch<SendReport>(async (tx, reports) => void (await this.apply(tx, reports)));

  constructor(
    private readonly repository: SendReportsRepository,
    private readonly metrics: FollowupsMetrics,
  ) {}

  /** Applies `report` with the transaction's other reports right before it commits. */
  applyLater(tx: Tx, report: SendReport): void {
    this.batch.add(tx, report);
  }

  /** Applies the reports handed to `applyLater` in this transaction now (before a handler that reads the same effects). */
  flush(tx: Tx): Promise<void> {
    return this.batch.flush(tx);
  }

  /**
   * Applies `reports` in order (after any still waiting in this transaction).
   * @returns for each report, whether its effect changed (false: not ours, already settled, or a repeat)
   */
  async apply(tx: Tx, reports: SendReport[]): Promise<boolean[]> {
    await this.batch.flush(tx);
    const locked = await this.repository.lockSends(
      tx,
      reports.map((r) => r.organizationId),
      reports.map((r) => r.key),
    );
    const byKey = new Map(locked.map((e) => [e.idempotency_key, { effect: e, dirty: false, setAt: null, floorAt: null } as Working]));
    const writes: EnrollmentSendWrite[] = [];
    const events: NewEnrollmentEvent[] = [];
    const changed = reports.map((report) => {
      const w = byKey.get(report.key);
      if (!w || w.effect.organization_id.toLowerCase() !== report.organizationId.toLowerCase()) return false;
      return report.kind === 'outcome' ? this.outcome(w, report, writes, events) : this.delivery(w, report, writes, events);
    });
    const dirty = [...byKey.values()].filter((w) => w.dirty);
    // One statement for the batch; an enrollment with several writes gets one more per extra write.
    const [first = [], ...more] = rounds(writes);
    await this.repository.write(tx, dirty.map(savedOf), first, events);
    for (const round of more) await this.repository.write(tx, [], round, []);
    return changed;
  }

  private outcome(w: Working, r: Extract<SendReport, { kind: 'outcome' }>, writes: EnrollmentSendWrite[], events: NewEnrollmentEvent[]): boolean {
    const e = w.effect;
    const messageId = isUuid(r.messageId) ? r.messageId : null;
    const from = r.outcome === 'uncertain' ? ['queued'] : ['queued', 'uncertain'];
    if (!from.includes(e.status)) {
      // The dispatcher's report may have settled the effect first; messaging's still names the message.
      if (messageId && !e.message_id) [e.message_id, w.dirty] = [messageId, true];
      return false;
    }
    e.status = r.outcome;
    e.message_id = messageId ?? e.message_id;
    e.reason = r.errorCode ?? e.reason;
    [w.setAt, w.floorAt, w.dirty] = [r.at, null, true];
    writes.push({ op: 'settle', enrollment_id: e.enrollment_id, effect_id: e.id, status: r.outcome, clear: r.outcome !== 'uncertain', step: e.step, at: r.at });
    events.push({ organization_id: r.organizationId, enrollment_id: e.enrollment_id, type: `send_${r.outcome}`, node_id: e.node_id, data: { effect_id: e.id, error_code: r.errorCode ?? null }, at: r.at });
    this.metrics.steps.inc({ action: 'send', outcome: r.outcome });
    return true;
  }

  private delivery(w: Working, r: Extract<SendReport, { kind: 'delivery' }>, writes: EnrollmentSendWrite[], events: NewEnrollmentEvent[]): boolean {
    const e = w.effect;
    // A send that failed or was cancelled is not delivered; messaging never reports that, but a stale report must not revive it.
    if (!['queued', 'uncertain', 'sent'].includes(e.status)) return false;
    const stamp = r.report === 'delivered' ? 'delivered_at' : 'read_at';
    if (e[stamp]) return false;
    const leftNow = e.status !== 'sent';
    const status: DeliveryReport = r.report === 'read' || e.read_at ? 'read' : 'delivered';
    e[stamp] = r.at;
    e.status = 'sent';
    if (!e.message_id && isUuid(r.messageId)) e.message_id = r.messageId;
    w.floorAt = w.floorAt && w.floorAt > r.at ? w.floorAt : r.at;
    w.dirty = true;
    // Only the enrollment's newest send speaks for `last_send.status` (a late report of an older one must not).
    writes.push({ op: 'raise', enrollment_id: e.enrollment_id, effect_id: e.id, status, clear: false, step: e.step, at: r.at });
    if (leftNow) events.push({ organization_id: r.organizationId, enrollment_id: e.enrollment_id, type: 'send_sent', node_id: e.node_id, data: { effect_id: e.id, error_code: null }, at: r.at });
    events.push({ organization_id: r.organizationId, enrollment_id: e.enrollment_id, type: `send_${r.report}`, node_id: e.node_id, data: { effect_id: e.id }, at: r.at });
    this.metrics.steps.inc({ action: 'send', outcome: r.report });
    return true;
  }
}

function savedOf(w: Working): SavedSend {
  const e = w.effect;
  return { id: e.id, status: e.status, message_id: e.message_id, reason: e.reason, delivered_at: e.delivered_at, read_at: e.read_at, set_at: w.setAt, floor_at: w.floorAt };
}

/**
 * The enrollment writes in rounds of at most one per enrollment, each enrollment's writes in their
 * order (one UPDATE … FROM applies one row per target), each round in enrollment id order.
 */
function rounds(writes: EnrollmentSendWrite[]): EnrollmentSendWrite[][] {
  const out: EnrollmentSendWrite[][] = [];
  const seen = new Map<string, number>();
  for (const w of writes) {
    const n = seen.get(w.enrollment_id) ?? 0;
    seen.set(w.enrollment_id, n + 1);
    (out[n] ??= []).push(w);
  }
  for (const round of out) round.sort((a, b) => (a.enrollment_id < b.enrollment_id ? -1 : a.enrollment_id > b.enrollment_id ? 1 : 0));
  return out;
}
