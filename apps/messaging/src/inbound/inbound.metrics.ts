import { Injectable } from '@nestjs/common';
import { Counter, Histogram } from 'prom-client';
import { METRIC_PREFIX, Metrics } from '@touchpoint/observability';

/**
 * Metrics of inbound messages, shared by receipt acceptance (`InboundReceiptsService`: accepted,
 * duplicate, ignored) and the message pipeline (`InboundService`: stored, duplicate, denied), so
 * both count into the one `messaging_inbound_total`.
 */
@Injectable()
export class InboundMetrics {
  /** Inbound messages by channel and outcome. */
  readonly received: Counter<'channel' | 'outcome'>;
  /** Time to take one inbound message from the RPC to its commit, seconds. */
  readonly seconds: Histogram<'channel'>;

  constructor(metrics: Metrics) {
    this.received = new Counter({ name: `${METRIC_PREFIX}messaging_inbound_total`, help: 'Inbound messages by channel and outcome (accepted as a receipt, stored, duplicate, denied, ignored)', labelNames: ['channel', 'outcome'], registers: [metrics.registry] });
    this.seconds = new Histogram({
      name: `${METRIC_PREFIX}messaging_inbound_seconds`,
      help: 'Time to take one inbound message from the RPC to its commit, seconds',
      labelNames: ['channel'],
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
      registers: [metrics.registry],
    });
  }
}
