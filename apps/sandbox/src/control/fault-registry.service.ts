import { Injectable, type OnModuleDestroy } from '@nestjs/common';

/**
 * A scripted fault for the next call(s) of a provider endpoint (DESIGN §7):
 * - `timeout`: hold the request `hold_ms` (default 30 s) before answering, longer than any client deadline;
 * - `drop`: take the request, then close the connection without an answer;
 * - `error`: answer `status` with the provider's error body for `code` (and `Retry-After` when given);
 * - `latency`: wait `latency_ms`, then answer normally.
 * `deliver` (timeout and drop; default true) says whether the provider still processed the request
 * — the case that makes an outcome ambiguous. `match` limits the fault to calls whose context has
 * these values (e.g. `{ "to": "5511987654321" }`). `times` repeats it (default 1).
 */
export interface Fault {
  kind: 'timeout' | 'drop' | 'error' | 'latency';
  times?: number;
  hold_ms?: number;
  latency_ms?: number;
  status?: number;
  code?: number;
  /** Graph's `error_subcode` and `error_data.details` of an `error` fault (Meta only). */
  subcode?: number;
  details?: string;
  message?: string;
  /** Seconds (number) or an HTTP date (string). */
  retry_after?: number | string;
  deliver?: boolean;
  match?: Record<string, string>;
}

/** One call a provider endpoint received, as the control API lists it. */
export interface ReceivedCall {
  seq: number;
  /** Epoch ms at which the request arrived (for latency and pacing measurements). */
  at: number;
  received_at: string;
  operation: string;
  /** Correlation values of the call (recipient, type, ...). */
  context: Record<string, string>;
  body: unknown;
  /**
   * Epoch ms at which the request reached the provider's fault check, before any scripted hold:
   * the moment the caller's wire attempt had certainly started (`at` comes after a `latency` hold).
   */
  arrived_at: number;
  /** What the sandbox did: `accepted`, `timeout`, `drop`, `error_<code>`, `rejected`. */
  outcome: string;
  /** The id the provider assigned, when it took the message. */
  provider_id?: string;
}

/** A scripted fault a call consumed, listed as soon as the call arrives (while it is still held). */
export interface TakenFault {
  /** Epoch ms at which the call arrived and took the fault. */
  taken_at: number;
  fault: Fault;
  context: Record<string, string>;
}

interface ProviderState {
  faults: Fault[];
  received: ReceivedCall[];
  taken: TakenFault[];
  seq: number;
}

/** Largest request log kept per provider (oldest dropped first). */
const RECEIVED_LOG_MAX = 200_000;

/**
 * Fault queues and request logs of every sandboxed provider, behind one control API
 * (`/sandbox/control/:provider/...`). A provider module registers its name at start-up and asks
 * `take(provider, context)` on each call; the model, Nylas and Unipile stand-ins can use the same.
 */
@Injectable()
export class FaultRegistry implements OnModuleDestroy {
  private readonly providers = new Map<string, ProviderState>();
  private readonly holds = new Set<() => void>();
  /** Arrival time of each call's context object, from its fault check to its record. */
  private readonly arrivals = new WeakMap<object, number>();

  /** Makes a provider known (idempotent). */
  register(provider: string): void {
    if (!this.providers.has(provider)) this.providers.set(provider, { faults: [], received: [], taken: [], seq: 0 });
  }

  registered(): string[] {
    return [...this.providers.keys()];
  }

  has(provider: string): boolean {
    return this.providers.has(provider);
  }

  /** Appends faults (each expanded `times` times); returns how many are now queued. */
  script(provider: string, faults: Fault[]): number {
    const state = this.state(provider);
    for (const fault of faults) for (let i = 0; i < Math.max(1, fault.times ?? 1); i++) state.faults.push({ ...fault, times: 1 });
    return state.faults.length;
  }

  /** The first queued fault whose `match` fits the call's context (consumed), if any. */
  take(provider: string, context: Record<string, string>, options: { explicitOnly?: boolean } = {}): Fault | undefined {
    const state = this.state(provider);
    const now = Date.now();
    this.arrivals.set(context, now);
    // explicitOnly: a secondary endpoint (a read) takes only faults that name it, never the send faults queued without a match.
    const index = state.faults.findIndex((f) => (f.match ? Object.entries(f.match).every(([k, v]) => context[k] === v) : !options.explicitOnly));
    if (index < 0) return undefined;
    const fault = state.faults.splice(index, 1)[0]!;
    state.taken.push({ taken_at: now, fault, context });
    if (state.taken.length > RECEIVED_LOG_MAX) state.taken.splice(0, state.taken.length - RECEIVED_LOG_MAX);
    return fault;
  }

  /** Faults consumed by calls that arrived at or after `sinceMs` (epoch ms), oldest first. */
  taken(provider: string, sinceMs = 0): TakenFault[] {
    return this.state(provider).taken.filter((t) => t.taken_at >= sinceMs);
  }

  faults(provider: string): Fault[] {
    return [...this.state(provider).faults];
  }

  clearFaults(provider: string): void {
    this.state(provider).faults = [];
  }

  record(provider: string, call: Omit<ReceivedCall, 'seq' | 'received_at' | 'at' | 'arrived_at'>): ReceivedCall {
    const state = this.state(provider);
    const at = Date.now();
    const entry: ReceivedCall = { seq: ++state.seq, at, received_at: new Date(at).toISOString(), arrived_at: this.arrivals.get(call.context) ?? at, ...call };
    state.received.push(entry);
    if (state.received.length > RECEIVED_LOG_MAX) state.received.splice(0, state.received.length - RECEIVED_LOG_MAX);
    return entry;
  }

  /** Calls received after `sinceSeq`, oldest first, at most `limit`. */
  received(provider: string, sinceSeq = 0, limit = RECEIVED_LOG_MAX): ReceivedCall[] {
    const list = this.state(provider).received;
    const out: ReceivedCall[] = [];
    for (const call of list) {
      if (call.seq <= sinceSeq) continue;
      out.push(call);
      if (out.length >= limit) break;
    }
    return out;
  }

  clearReceived(provider: string): void {
    this.state(provider).received = [];
  }

  /** Clears every provider's faults and logs, and releases held requests. */
  reset(): void {
    for (const state of this.providers.values()) {
      state.faults = [];
      state.received = [];
      state.taken = [];
    }
    this.releaseHolds();
  }

  /** Waits `ms`, or less when released (client gone, reset, sandbox stopping). */
  hold(ms: number, onClose: (release: () => void) => void = () => undefined): Promise<void> {
    return new Promise((resolve) => {
      let done = false;
      const release = () => {
        if (done) return;
        done = true;
        clearTimeout(timer);
        this.holds.delete(release);
        resolve();
      };
      const timer = setTimeout(release, ms);
      this.holds.add(release);
      onClose(release);
    });
  }

  onModuleDestroy(): void {
    this.releaseHolds();
  }

  private releaseHolds(): void {
    for (const release of [...this.holds]) release();
  }

  private state(provider: string): ProviderState {
    this.register(provider);
    return this.providers.get(provider)!;
  }
}

/** Checks a fault given to the control API; returns the problem, or null. */
export function faultProblem(value: unknown): string | null {
  if (!value || typeof value !== 'object') return 'a fault must be an object';
  const f = value as Record<string, unknown>;
  if (!['timeout', 'drop', 'error', 'latency'].includes(f.kind as string)) return 'kind must be timeout, drop, error or latency';
  const nonNegativeInt = (k: string) => f[k] === undefined || (Number.isInteger(f[k]) && (f[k] as number) >= 0);
  if (!nonNegativeInt('hold_ms') || !nonNegativeInt('latency_ms')) return 'hold_ms and latency_ms must be non-negative integers';
  if (f.times !== undefined && (!Number.isInteger(f.times) || (f.times as number) < 1)) return 'times must be a positive integer';
  if (f.status !== undefined && (!Number.isInteger(f.status) || (f.status as number) < 400 || (f.status as number) > 599)) return 'status must be 400..599';
  if (f.kind === 'error' && f.code === undefined && f.status === undefined) return 'an error fault needs a code or a status';
  if (f.code !== undefined && !Number.isInteger(f.code)) return 'code must be an integer';
  if (f.subcode !== undefined && !Number.isInteger(f.subcode)) return 'subcode must be an integer';
  if (f.details !== undefined && typeof f.details !== 'string') return 'details must be a string';
  if (f.retry_after !== undefined && typeof f.retry_after !== 'number' && typeof f.retry_after !== 'string') return 'retry_after must be seconds or an HTTP date';
  if (f.match !== undefined && (typeof f.match !== 'object' || f.match === null || Object.values(f.match).some((v) => typeof v !== 'string'))) return 'match must map names to strings';
  return null;
}
