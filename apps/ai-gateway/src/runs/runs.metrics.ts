import { Injectable } from '@nestjs/common';
import { Counter, Histogram } from 'prom-client';
import { METRIC_PREFIX, Metrics } from '@touchpoint/observability';

/**
 * Metrics of `ai.run` (seed 000 names `ai_requests_total{kind}`):
 * requests by kind and outcome (a status, or `replayed` for a stored answer), provider call
 * latency, tokens and cost.
 */
@Injectable()
export class RunsMetrics {
  readonly requests: Counter<'kind' | 'outcome'>;
  readonly latencySeconds: Histogram<'kind' | 'outcome'>;
  readonly tokens: Counter<'kind' | 'type'>;
  readonly costUsd: Counter<'kind'>;

  constructor(metrics: Metrics) {
    const registers = [metrics.registry];
    this.requests = new Counter({
      name: `${METRIC_PREFIX}ai_requests_total`,
      help: 'ai.run requests by kind and outcome (ok, invalid_output, unavailable, timeout, budget_exhausted, replayed)',
      labelNames: ['kind', 'outcome'],
      registers,
    });
    this.latencySeconds = new Histogram({
      name: `${METRIC_PREFIX}ai_request_duration_seconds`,
      help: 'Duration of the provider call of a run, seconds',
      labelNames: ['kind', 'outcome'],
      buckets: [0.1, 0.25, 0.5, 1, 2, 4, 8, 15, 30, 60, 120],
      registers,
    });
    this.tokens = new Counter({
      name: `${METRIC_PREFIX}ai_tokens_total`,
      help: 'Tokens reported by the provider, by kind and type (prompt, completion)',
      labelNames: ['kind', 'type'],
      registers,
    });
    this.costUsd = new Counter({
      name: `${METRIC_PREFIX}ai_cost_usd_total`,
      help: 'Cost of provider calls from the price table, USD',
      labelNames: ['kind'],
      registers,
    });
  }
}
