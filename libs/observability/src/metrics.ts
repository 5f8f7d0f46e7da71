import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';

/** Why the bus parks a message in a dead-letter queue (`touchpoint_bus_dead_lettered_total{reason}`). */
export const DEAD_LETTER_REASONS = ['unreadable', 'no_handler', 'handler_failed'] as const;

/**
 * Outcomes of a bus handler (`touchpoint_bus_consumed_total{outcome}`); `skipped`: its `when`
 * rejected the message (`OnBusMessage`), so it did not run and left no inbox row.
 */
export const CONSUME_OUTCOMES = ['handled', 'duplicate', 'failed', 'skipped'] as const;

/** Prefix of every Touchpoint metric (DESIGN §8). */
export const METRIC_PREFIX = 'touchpoint_';

/**
 * Creates every label set of a counter at 0: the cartesian product of the given values. A labelled
 * series that was never incremented does not exist in `/metrics`, and `increase(…) > 0` cannot see
 * the first event of a series that appears with it (there is no earlier sample), so a counter an
 * alert reads is zeroed at start for every label value it can take.
 * @param values each label's known values; a label left out must not be in `labelNames`
 */
export function zeroCounter<L extends string>(counter: Counter<L>, values: Record<L, readonly string[]>): void {
  let sets: Partial<Record<L, string>>[] = [{}];
  for (const [label, list] of Object.entries(values) as [L, readonly string[]][]) {
    sets = sets.flatMap((set) => list.map((value) => ({ ...set, [label]: value })));
  }
  for (const set of sets) counter.inc(set as Record<L, string>, 0);
}

/**
 * One Prometheus registry per process, with the default process metrics and the bus counters.
 * Features register their own metrics on `registry` with `METRIC_PREFIX`.
 */
export class Metrics {
  readonly registry = new Registry();
  readonly busPublished: Counter<'type'>;
  readonly busConsumed: Counter<'handler' | 'outcome'>;
  readonly busRetried: Counter<'handler'>;
  readonly busDeadLettered: Counter<'queue' | 'reason'>;
  readonly busHandleSeconds: Histogram<'handler'>;
  readonly busBatchRollbacks: Counter<'reason'>;
  readonly relayLagSeconds: Gauge;

  constructor(service: string) {
    this.registry.setDefaultLabels({ service });
    collectDefaultMetrics({ register: this.registry, prefix: METRIC_PREFIX });
    this.busPublished = new Counter({
      name: `${METRIC_PREFIX}bus_published_total`,
      help: 'Events and commands published by the outbox relay (after the broker confirmed them)',
      labelNames: ['type'],
      registers: [this.registry],
    });
    this.busConsumed = new Counter({
      name: `${METRIC_PREFIX}bus_consumed_total`,
      help: 'Bus messages taken by a handler, by outcome (handled, duplicate, failed, skipped)',
      labelNames: ['handler', 'outcome'],
      registers: [this.registry],
    });
    this.busRetried = new Counter({
      name: `${METRIC_PREFIX}bus_retried_total`,
      help: 'Bus messages sent to a retry queue after a handler error',
      labelNames: ['handler'],
      registers: [this.registry],
    });
    this.busDeadLettered = new Counter({
      name: `${METRIC_PREFIX}bus_dead_lettered_total`,
      help: 'Bus messages parked in a dead-letter queue',
      labelNames: ['queue', 'reason'],
      registers: [this.registry],
    });
    this.busHandleSeconds = new Histogram({
      name: `${METRIC_PREFIX}bus_handle_seconds`,
      help: 'Time from an event being committed (occurred_at) to its handler committing, seconds',
      labelNames: ['handler'],
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
      registers: [this.registry],
    });
    this.busBatchRollbacks = new Counter({
      name: `${METRIC_PREFIX}bus_batch_rollbacks_total`,
      help: 'Consumer batches rolled back (their messages then ran one by one), by reason: lock_timeout, deadlock, error',
      labelNames: ['reason'],
      registers: [this.registry],
    });
    zeroCounter(this.busBatchRollbacks, { reason: ['lock_timeout', 'deadlock', 'error'] });
    this.relayLagSeconds = new Gauge({
      name: `${METRIC_PREFIX}bus_relay_lag_seconds`,
      help: 'Age of the oldest unpublished outbox event, seconds (0 when none)',
      registers: [this.registry],
    });
    this.relayLagSeconds.set(0);
  }

  /** Creates a dead-letter queue's series at 0 for every reason (the bus calls it when it knows the queue's name). */
  zeroDeadLetters(queue: string): void {
    zeroCounter(this.busDeadLettered, { queue: [queue], reason: DEAD_LETTER_REASONS });
  }

  /** Creates a handler's bus series at 0 (retried, consumed by outcome), when the handler is registered. */
  zeroHandler(handler: string): void {
    zeroCounter(this.busRetried, { handler: [handler] });
    zeroCounter(this.busConsumed, { handler: [handler], outcome: CONSUME_OUTCOMES });
  }
}
