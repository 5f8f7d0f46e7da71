import { Inject, Injectable } from '@nestjs/common';
import { Counter } from 'prom-client';
import { type AbuseCheckData, AbuseRpc, type AbuseVerdict } from '@touchpoint/contracts';
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

/**
 * Asks the abuse service about an inbound message, and applies seed 004 "When the Check Itself
 * Fails" when it cannot answer. Rate limiting is an availability control, so a failed check costs
 * nobody their message unless access control says so: only an active block denies (fail closed);
 * a throttle or nothing admits (fail open). The block is read from the abuse service's own actions
 * (`abuse.restrictions.active`, the authoritative state), and only when that cannot be asked either
 * from messaging's event-fed copy; an error reading the copy aborts (the caller answers 503 and the
 * provider redelivers). A check that answers `allowed = false` always denies.
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

  /** @throws AppError service_unavailable when the check failed AND no state of the blocks could be read */
  async check(input: AbuseCheckData): Promise<GuardVerdict> {
    try {
      const verdict = await this.rpc.call('abuse', AbuseRpc.Check, input, this.config.ABUSE_CHECK_TIMEOUT_MS);
      return { ...verdict, source: 'abuse' };
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
