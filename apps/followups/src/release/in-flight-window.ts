import { Inject, Injectable } from '@nestjs/common';
import type { Tx } from '@touchpoint/database';
import { APP_CONFIG } from '@touchpoint/runtime';
import type { FollowupsConfig } from '../followups.config.js';
import { SendersRepository } from '../senders/senders.repository.js';
import { ReleaseRepository } from './release.repository.js';

/** Why the window holds a send back, and how. */
export type InFlightDeferral = {
  at: Date;
  reason: 'sender_backlog';
  /** Show it as the step's schedule plan. */
  plan: true;
  /** Write a `deferred` timeline entry: only the first time this visit waits for the backlog, so a long outage does not flood the timeline. */
  announce: boolean;
};

/**
 * The per-number window of follow-up sends in flight (seed 000 "send": "window of follow-up
 * messages QUEUED/PROCESSING per number · … backlog → defer"). A send counts while its effect is
 * `queued`: from its release until the provider accepts it (`outbox.entry.accepted`, messaging's
 * `messaging.message.sent`) or it fails, is cancelled or becomes uncertain (SendOutcomesConsumer).
 * When a number already has FOLLOWUP_SENDER_INFLIGHT_WINDOW of them, a new release on it waits
 * FOLLOWUP_SENDER_BACKLOG_RETRY_MS instead of adding to the outbox's queue: a provider that is slow
 * or refusing holds back at most a window's worth of follow-ups, and they go on once it accepts.
 * An `uncertain` send is not counted: the dispatcher never retries it (DESIGN §5.1), so it takes
 * no capacity of the number.
 */
@Injectable()
export class InFlightWindow {
  /** Sends admitted in a transaction not yet written (a batch writes its effects at its end), per number. */
  private readonly admitted = new WeakMap<Tx, Map<string, number>>();

  constructor(
    private readonly senders: SendersRepository,
    private readonly release: ReleaseRepository,
    @Inject(APP_CONFIG) private readonly config: FollowupsConfig,
  ) {}

  /**
   * Admits one send on `senderId` in `tx`, or says when to try again. Exact when the caller holds
   * the number's pacing row (FOLLOWUP_SENDER_GAP_MS > 0, seed 000 "pacing row SKIP LOCKED · window
   * …"): releases of one number then admit one at a time, and this count, a statement of its own
   * after the lock, sees what the previous holder committed. With pacing off the count takes no
   * lock — taking one there made every concurrent release of a busy number come back later — so
   * releases of one number running at that same moment may each take the last place: the window
   * can be passed by at most the number of release transactions running at once. An admitted send
   * counts for the rest of `tx` even if a later check (the monthly quota) defers it: at worst one
   * batch queues one send fewer on that number, never one more.
   * @param visit the step asking (for the timeline: announce the first backlog deferral only)
   * @returns undefined when the send may be queued now, else the deferral
   */
  async admit(tx: Tx, senderId: string, now: Date, visit: { enrollmentId: string; nodeId: string; step: number }): Promise<InFlightDeferral | undefined> {
    const size = this.config.FOLLOWUP_SENDER_INFLIGHT_WINDOW;
    if (size === 0) return undefined;
    let inTx = this.admitted.get(tx);
    const earlier = inTx?.get(senderId) ?? 0;
    const queued = earlier + (await this.senders.queuedSendsOn(tx, senderId, size));
    if (queued >= size) {
      const planned = await this.release.schedulePlanReason(tx, visit.enrollmentId, visit.nodeId, visit.step);
      return { at: new Date(now.getTime() + this.config.FOLLOWUP_SENDER_BACKLOG_RETRY_MS), reason: 'sender_backlog', plan: true, announce: planned !== 'sender_backlog' };
    }
    if (!inTx) this.admitted.set(tx, (inTx = new Map()));
    inTx.set(senderId, earlier + 1);
    return undefined;
  }
}
