import { Injectable } from '@nestjs/common';
import { Counter, Histogram } from 'prom-client';
import { FLOW_TRIGGER_KINDS } from '@touchpoint/contracts';
import { METRIC_PREFIX, Metrics, zeroCounter } from '@touchpoint/observability';

/** Outcomes of a rule trigger (`followup_triggers_total{outcome}`). */
export const TRIGGER_OUTCOMES = ['enrolled', 'duplicate', 'rejected', 'no_match', 'retry', 'failed'] as const;
/** Outcomes of a release transaction (`followup_releases_total{outcome}`). */
export const RELEASE_OUTCOMES = ['released', 'busy', 'failed', 'idle'] as const;

/**
 * The follow-up engine's metrics (seed 000 "Observability"), under the `touchpoint_` prefix:
 * steps by action and outcome, release lag, enrollments by source and result, finished enrollments
 * by status and reason.
 */
@Injectable()
export class FollowupsMetrics {
  /** `action`: wait, send, tag, handoff, condition, match_reply, repeat, end, check; `outcome`: queued, skipped, deferred, … */
  readonly steps: Counter<'action' | 'outcome'>;
  /** How late a due step was released: claim time − next_run_at, seconds. */
  readonly releaseLag: Histogram;
  readonly enrollments: Counter<'source' | 'result'>;
  readonly finished: Counter<'status' | 'reason'>;
  readonly releases: Counter<'outcome'>;
  /** Rule triggers by type and outcome (seed 000 `followup_triggers_total{type,outcome}`), counted per rule by the trigger loop. */
  readonly triggers: Counter<'type' | 'outcome'>;
  /** One-off returns by outcome (scheduled, resumed, template, alerted, skipped, failed, dropped, cancelled, already_pending). */
  readonly promises: Counter<'outcome'>;
  /** Model requests of AI steps and returns through ai-gateway, by kind and run status (seed 000 `ai_requests_total{kind}`). */
  readonly aiRequests: Counter<'kind' | 'status'>;

  constructor(metrics: Metrics) {
    const registers = [metrics.registry];
    this.steps = new Counter({ name: `${METRIC_PREFIX}followup_steps_total`, help: 'Follow-up steps run by the release loop, by action and outcome', labelNames: ['action', 'outcome'], registers });
    this.releaseLag = new Histogram({
      name: `${METRIC_PREFIX}followup_release_lag_seconds`,
      help: 'Time between a follow-up step falling due and its release, seconds',
      buckets: [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900],
      registers,
    });
    this.enrollments = new Counter({ name: `${METRIC_PREFIX}followup_enrollments_total`, help: 'Enrollment requests by source and result', labelNames: ['source', 'result'], registers });
    this.finished = new Counter({ name: `${METRIC_PREFIX}followup_finished_total`, help: 'Enrollments that left the live statuses, by status and reason', labelNames: ['status', 'reason'], registers });
    this.triggers = new Counter({ name: `${METRIC_PREFIX}followup_triggers_total`, help: 'Rule triggers by type and outcome: enrolled, duplicate, rejected (business), no_match, retry, failed (given up after 5 attempts)', labelNames: ['type', 'outcome'], registers });
    this.promises = new Counter({ name: `${METRIC_PREFIX}followup_promises_total`, help: 'One-off returns by outcome', labelNames: ['outcome'], registers });
    this.aiRequests = new Counter({ name: `${METRIC_PREFIX}followup_ai_requests_total`, help: 'Model requests of follow-up AI steps and one-off returns, by kind and run status', labelNames: ['kind', 'status'], registers });
    this.releases = new Counter({ name: `${METRIC_PREFIX}followup_releases_total`, help: 'Release transactions by outcome (released, busy, failed, idle)', labelNames: ['outcome'], registers });
    // The alerted counters exist at 0 from the start (seed 000 "FollowUpTriggerFailures" fires on the first failure).
    zeroCounter(this.triggers, { type: FLOW_TRIGGER_KINDS.filter((kind) => kind !== 'manual'), outcome: TRIGGER_OUTCOMES });
    zeroCounter(this.releases, { outcome: RELEASE_OUTCOMES });
  }
}
