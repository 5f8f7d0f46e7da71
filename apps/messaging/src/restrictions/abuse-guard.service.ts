import { Inject, Injectable } from '@nestjs/common';
import { Counter } from 'prom-client';
import { type AbuseCheckData, type AbuseCheckOutcome, AbuseRpc, type AbuseVerdict } from '@touchpoint/contracts';
import { AppError, ErrorCode } from '@touchpoint/errors';
import { type Logger, METRIC_PREFIX, Metrics, zeroCounter } from '@touchpoint/observability';
import { APP_CONFIG, LOGGER, RpcClient, UnitOfWork } from '@touchpoint/runtime';
import { Clock } from '@touchpoint/time';
import type { MessagingConfig } from '../messaging.config.js';
import { RestrictionsRepository } from './restrictions.repository.js';

/** The verdict messaging acts on, with where it came from. */
export interface GuardVerdict extends AbuseVerdict {
  /** `abuse`: the abuse service answered; `fail_open` / `fail_closed`: the check failed and the block in force (or none) decided. */
  source: 'abuse' | 'fail_open' | 'fail_closed';
}

/** Where the block in force was read when the check failed. */
type BlockSource = 'abuse' | 'read_model';

/** Most checks one `abuse.check_batch` call carries (the receipt worker's senders judged at once). */
const MAX_CHECKS_PER_CALL = 256;

/** A check waiting for the next `abuse.check_batch` call. */
interface WaitingCheck {
  input: AbuseCheckData;
  settle: (outcome: AbuseCheckOutcome | Error) => void;
}

/**
 * Asks the abuse service about an inbound message, and applies seed 004 "When the Check Itself
 * Fails" when it cannot answer. Rate limiting is an availability control, so a failed check costs
 * nobody their message unless access control says so: only an active block denies (fail closed);
 * a throttle or nothing admits (fail open). The block is read from the abuse service's own actions
 * (`abuse.restrictions.active`, the authoritative state), and only when that cannot be asked either
 * from messaging's event-fed copy; an error reading the copy aborts (the caller answers 503 and the
 * provider redelivers). A check that answers `allowed = false` always denies.
 *
 * The checks asked for in the same turn of the event loop (the receipt worker's senders, judged
 * side by side, each ask for their next message together) go to the abuse service in one
 * `abuse.check_batch` call, which counts them in one transaction, in the order asked: two round
 * trips over the broker for the lot instead of two per message. The call's deadline is
 * ABUSE_CHECK_TIMEOUT_MS, and a call that fails fails each of its checks, which each then decide
 * as above.
 */
@Injectable()
export class AbuseGuardService {
  private readonly failures: Counter<'outcome'>;

  constructor(
    private readonly rpc: RpcClient,
    private readonly uow: UnitOfWork,
    private readonly restrictions: RestrictionsRepository,
    private readonly clock: Clock,
    metrics: Metrics,
    @Inject(APP_CONFIG) private readonly config: MessagingConfig,
    @Inject(LOGGER) private readonly logger: Logger,
  ) {
    this.failures = new Counter({
      name: `${METRIC_PREFIX}messaging_abuse_check_failures_total`,
      help: 'Abuse checks that failed, by what decided instead (fail_open, fail_closed, aborted)',
      labelNames: ['outcome'],
      registers: [metrics.registry],
    });
    zeroCounter(this.failures, { outcome: ['fail_open', 'fail_closed', 'aborted'] });
  }

  private waiting: WaitingCheck[] = [];

  /** @throws AppError service_unavailable when the check failed AND no state of the blocks could be read */
  async check(input: AbuseCheckData): Promise<GuardVerdict> {
    try {
      const outcome = await this.ask(input);
      if ('error' in outcome) throw new AppError(outcome.error.code as ErrorCode, outcome.error.message);
      return { ...outcome.verdict, source: 'abuse' };
    } catch (err) {
      this.logger.error(
        {
          event: 'messaging.abuse_check_failed',
          organization_id: input.organization_id,
          contact_id: input.contact_id,
          conversation_id: input.conversation_id,
          code: err instanceof AppError ? err.code : undefined,
          details: err instanceof AppError ? err.details : undefined,
          err: (err as Error).message,
        },
        'abuse check failed; deciding from the block in force',
      );
    }
    const { block, from } = await this.blockInForce(input);
    if (block) {
      this.failures.inc({ outcome: 'fail_closed' });
      this.logger.warn({ event: 'messaging.abuse_fail_closed', organization_id: input.organization_id, contact_id: input.contact_id, action_id: block.action_id, block_source: from }, 'abuse check failed; an active block denies');
      return { allowed: false, limit_type: 'blocked', reset_at: new Date(block.expires_at).toISOString(), action: null, patterns: [], source: 'fail_closed' };
    }
    this.failures.inc({ outcome: 'fail_open' });
    return { allowed: true, limit_type: null, reset_at: null, action: null, patterns: [], source: 'fail_open' };
  }

  /**
   * Queues one check for the call that leaves once this turn of the event loop is over, with every
   * check queued in it (at most MAX_CHECKS_PER_CALL a call).
   * @returns its outcome; rejects when the call failed (timeout, broker, the service's error)
   */
  private ask(input: AbuseCheckData): Promise<AbuseCheckOutcome> {
    return new Promise((resolve, reject) => {
      if (this.waiting.length === 0) setImmediate(() => this.send());
      this.waiting.push({ input, settle: (outcome) => (outcome instanceof Error ? reject(outcome) : resolve(outcome)) });
    });
  }

  /** Sends the waiting checks, MAX_CHECKS_PER_CALL a call, and settles each with its outcome. */
  private send(): void {
    const waiting = this.waiting;
    this.waiting = [];
    for (let from = 0; from < waiting.length; from += MAX_CHECKS_PER_CALL) {
      const call = waiting.slice(from, from + MAX_CHECKS_PER_CALL);
      this.rpc.call('abuse', AbuseRpc.CheckBatch, { checks: call.map((c) => c.input) }, this.config.ABUSE_CHECK_TIMEOUT_MS).then(
        ({ outcomes }) => call.forEach((c, i) => c.settle(outcomes?.[i] ?? new AppError(ErrorCode.ServiceUnavailable, 'abuse answered fewer outcomes than checks'))),
        (err: Error) => call.forEach((c) => c.settle(err)),
      );
    }
  }

  /**
   * The block in force for the contact: the abuse service's answer when it gives one (a throttle
   * there is not a block), else messaging's read model.
   * @throws AppError service_unavailable when neither can be read
   */
  private async blockInForce(input: AbuseCheckData): Promise<{ block: { action_id: string; expires_at: Date | string } | null; from: BlockSource }> {
    try {
      const { restriction } = await this.rpc.call('abuse', AbuseRpc.ActiveRestriction, { organization_id: input.organization_id, contact_id: input.contact_id }, this.config.ABUSE_STATE_TIMEOUT_MS);
      return { block: restriction?.action_type === 'block' ? restriction : null, from: 'abuse' };
    } catch (err) {
      this.logger.warn({ event: 'messaging.abuse_state_unavailable', organization_id: input.organization_id, contact_id: input.contact_id, err: (err as Error).message }, 'abuse state unavailable; reading the restriction read model');
    }
    try {
      const block = await this.uow.run((tx) => this.restrictions.findActiveBlock(tx, input.organization_id, input.contact_id, this.clock.now()));
      return { block, from: 'read_model' };
    } catch (err) {
      this.failures.inc({ outcome: 'aborted' });
      this.logger.error({ event: 'messaging.restriction_read_failed', organization_id: input.organization_id, contact_id: input.contact_id, err: (err as Error).message }, 'cannot read restrictions; aborting');
      throw new AppError(ErrorCode.ServiceUnavailable, 'the abuse check failed and restrictions could not be read; retry later');
    }
  }
}
