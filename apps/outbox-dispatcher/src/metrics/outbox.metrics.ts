import { Injectable } from '@nestjs/common';
import { Counter, Gauge, Histogram } from 'prom-client';
import { OUTBOX_CHANNELS, OUTBOX_CLASSIFICATIONS } from '@touchpoint/contracts';
import { METRIC_PREFIX, Metrics, zeroCounter } from '@touchpoint/observability';

/**
 * The dispatcher's metrics, on the process registry under `touchpoint_outbox_`.
 * The alert on `touchpoint_outbox_oldest_due_age_seconds` is in deploy/prometheus/alerts.yml.
 */
/** The sweep's steps (sweep.service.ts `SWEEP_STEPS`), named here so the metrics need not import the sweep. */
const SWEEP_STEP_NAMES = ['probe', 'wake', 'recover', 'drain', 'prune'] as const;

@Injectable()
export class OutboxMetrics {
  /** Settled sends by outcome (accepted, failed, ambiguous, retry) and classification. */
  readonly sends: Counter<'channel' | 'outcome' | 'classification'>;
  /** Wire attempts opened. */
  readonly attempts: Counter<'channel'>;
  /** Ambiguous entries waiting for correlation or an operator (set by the sweep). */
  readonly ambiguous: Gauge;
  /** Age of the oldest due pending entry, seconds (set by the sweep). */
  readonly oldestDueAge: Gauge;
  /** Claims that found work held back by the pacing interval or a backoff. */
  readonly pacingWaits: Counter;
  /** Time from enqueue to the attempt start of an entry's first attempt, seconds. */
  readonly enqueueToWire: Histogram<'channel'>;
  /** Ambiguous resolutions by outcome (resolved, resolved_failed, evidence_recorded, ...). */
  readonly resolutions: Counter<'outcome' | 'source'>;
  /** Stranded sends settled by lease recovery, by result (requeued, ambiguous, accepted_by_evidence). */
  readonly recovered: Counter<'result'>;
  /** Sweep steps by step and result. */
  readonly sweepSteps: Counter<'step' | 'result'>;
  /** Rows removed by pruning. */
  readonly pruned: Counter<'kind'>;

  constructor(metrics: Metrics) {
    const registers = [metrics.registry];
    const p = `${METRIC_PREFIX}outbox_`;
    const existing = (name: string) => metrics.registry.getSingleMetric(name);
    // One registry per process; a second module instance in the same process reuses the metrics.
    this.sends = (existing(`${p}sends_total`) as Counter<'channel' | 'outcome' | 'classification'>) ?? new Counter({ name: `${p}sends_total`, help: 'Settled send attempts by outcome and classification', labelNames: ['channel', 'outcome', 'classification'], registers });
    this.attempts = (existing(`${p}attempts_total`) as Counter<'channel'>) ?? new Counter({ name: `${p}attempts_total`, help: 'Wire attempts opened', labelNames: ['channel'], registers });
    this.ambiguous = (existing(`${p}ambiguous_entries`) as Gauge) ?? new Gauge({ name: `${p}ambiguous_entries`, help: 'Entries parked ambiguous (never retried automatically)', registers });
    this.oldestDueAge = (existing(`${p}oldest_due_age_seconds`) as Gauge) ?? new Gauge({ name: `${p}oldest_due_age_seconds`, help: 'Age of the oldest due pending entry, seconds', registers });
    this.pacingWaits = (existing(`${p}pacing_waits_total`) as Counter) ?? new Counter({ name: `${p}pacing_waits_total`, help: 'Drain passes that found pending work held back by pacing or backoff', registers });
    this.enqueueToWire =
      (existing(`${p}enqueue_to_wire_seconds`) as Histogram<'channel'>) ??
      new Histogram({ name: `${p}enqueue_to_wire_seconds`, help: 'Enqueue to first attempt start, seconds', labelNames: ['channel'], buckets: [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300], registers });
    this.resolutions = (existing(`${p}resolutions_total`) as Counter<'outcome' | 'source'>) ?? new Counter({ name: `${p}resolutions_total`, help: 'Ambiguous-send resolutions by outcome and source', labelNames: ['outcome', 'source'], registers });
    this.recovered = (existing(`${p}lease_recovered_total`) as Counter<'result'>) ?? new Counter({ name: `${p}lease_recovered_total`, help: 'Stranded sends settled by lease recovery', labelNames: ['result'], registers });
    this.sweepSteps = (existing(`${p}sweep_steps_total`) as Counter<'step' | 'result'>) ?? new Counter({ name: `${p}sweep_steps_total`, help: 'Sweep steps run, by result', labelNames: ['step', 'result'], registers });
    this.pruned = (existing(`${p}pruned_total`) as Counter<'kind'>) ?? new Counter({ name: `${p}pruned_total`, help: 'Rows pruned by retention', labelNames: ['kind'], registers });
    // Every failure classification exists at 0 from the start, so TouchpointOutboxAccountRestricted
    // (an increase() alert) fires on the first restricted send.
    zeroCounter(this.sends, { channel: OUTBOX_CHANNELS, outcome: ['failed'], classification: OUTBOX_CLASSIFICATIONS });
    zeroCounter(this.sends, { channel: OUTBOX_CHANNELS, outcome: ['accepted'], classification: ['none'] });
    zeroCounter(this.attempts, { channel: OUTBOX_CHANNELS });
    zeroCounter(this.recovered, { result: ['requeued', 'ambiguous', 'acceptedByEvidence', 'failedByEvidence', 'failed'] });
    zeroCounter(this.sweepSteps, { step: SWEEP_STEP_NAMES, result: ['ok', 'error'] });
    zeroCounter(this.pruned, { kind: ['entries', 'pairs', 'statuses'] });
  }
}
