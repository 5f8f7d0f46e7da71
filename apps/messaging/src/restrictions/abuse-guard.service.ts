import { Inject, Injectable } from '@nestjs/common';
import { Counter } from 'prom-client';
import { type AbuseCheckData, AbuseRpc, type AbuseVerdict } from '@touchpoint/contracts';
import { AppError, ErrorCode } from '@touchpoint/errors';
import { type Logger, METRIC_PREFIX, Metrics } from '@touchpoint/observability';
import { APP_CONFIG, LOGGER, RpcClient, UnitOfWork } from '@touchpoint/runtime';
import { Clock } from '@touchpoint/time';
import type { MessagingConfig } from '../messaging.config.js';
import { RestrictionsRepository } from './restrictions.repository.js';

/** The verdict messaging acts on, with where it came from. */
export interface GuardVerdict extends AbuseVerdict {
  /** `abuse`: the abuse service answered; `fail_open` / `fail_closed`: it failed and the read model decided. */
  source: 'abuse' | 'fail_open' | 'fail_closed';
}

/**
 * Asks the abuse service about an inbound message, and applies seed 004 "When the Check Itself
 * Fails" when it cannot answer: rate limiting is an availability control, so a failed check falls
 * back to the read model of penalties — an active block or throttle there denies (fail closed),
 * nothing there admits (fail open), and an error reading it aborts (the caller answers 503 and the
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
  }

  /** @throws AppError service_unavailable when the check failed AND the read model could not be read */
  async check(input: AbuseCheckData): Promise<GuardVerdict> {
    try {
      const verdict = await this.rpc.call<AbuseVerdict>('abuse', AbuseRpc.Check, input, this.config.ABUSE_CHECK_TIMEOUT_MS);
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
        'abuse check failed; deciding from the restriction read model',
      );
    }
    let active;
    try {
      active = await this.uow.run((tx) => this.restrictions.findActive(tx, input.organization_id, input.contact_id, this.clock.now()));
    } catch (err) {
      this.failures.inc({ outcome: 'aborted' });
      this.logger.error({ event: 'messaging.restriction_read_failed', organization_id: input.organization_id, contact_id: input.contact_id, err: (err as Error).message }, 'cannot read restrictions; aborting');
      throw new AppError(ErrorCode.ServiceUnavailable, 'the abuse check failed and restrictions could not be read; retry later');
    }
    if (active) {
      this.failures.inc({ outcome: 'fail_closed' });
      return {
        allowed: false,
        limit_type: active.action_type === 'block' ? 'blocked' : 'throttled',
        reset_at: new Date(active.expires_at).toISOString(),
        action: null,
        patterns: [],
        source: 'fail_closed',
      };
    }
    this.failures.inc({ outcome: 'fail_open' });
    return { allowed: true, limit_type: null, reset_at: null, action: null, patterns: [], source: 'fail_open' };
  }
}
