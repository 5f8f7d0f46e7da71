/**
 * The faults of a chaos run (issue 17): at moments drawn from the seed, each kind of fault is done
 * to the running platform — a process SIGKILLed and restarted, broker or database connections cut
 * through the processes' proxies, the provider stand-ins answering badly, webhooks misdelivered.
 */
import type { TcpProxy } from '@touchpoint/testing';
import type { ChaosPlatform, ChaosProcess } from './platform.js';
import { forkRng } from './rng.js';
import type { FaultKind, Rng } from './types.js';

/** Every fault kind, in the fixed order the per-kind random streams are forked in. */
export const FAULT_KINDS: readonly FaultKind[] = [
  'process_kill',
  'broker_cut_one',
  'broker_cut_all',
  'database_cut',
  'provider_timeout_after_accept',
  'provider_timeout_before_accept',
  'provider_5xx',
  'provider_rate_limited',
  'provider_slow',
  'webhook_duplicate',
  'webhook_late',
  'webhook_out_of_order',
];

/** Faults per minute of each kind. */
export type FaultRates = Partial<Record<FaultKind, number>>;

/** Rates of `npm run chaos` without options: every kind about 8 times in 10 minutes, ~1.2 faults/min each on a 2-core machine in all. */
export const DEFAULT_FAULT_RATES: Required<FaultRates> = Object.fromEntries(FAULT_KINDS.map((k) => [k, 0.8])) as Required<FaultRates>;

/** The same rate for every kind. */
export function uniformRates(perMinute: number): Required<FaultRates> {
  return Object.fromEntries(FAULT_KINDS.map((k) => [k, perMinute])) as Required<FaultRates>;
}

/**
 * One fault of the run's schedule, drawn up front from the seed (issue 17: a failing seed replays
 * the same run): its offset from the start of the run and everything it will do, so the schedule
 * does not depend on the machine's speed. `target` names a process (`messaging#2`) for the kinds
 * that hit one; `ms` is how long a cut, a pause or a webhook window lasts.
 */
export interface PlannedFault {
  kind: FaultKind;
  /** Offset from the start of the faults, ms. */
  atMs: number;
  target?: string;
  ms?: number;
  provider?: Provider;
  /** The sandbox fault queued (provider kinds), `times` included. */
  fault?: Record<string, unknown>;
  /** Webhook kinds: the share of webhooks misdelivered, how late, the sandbox's seed. */
  fraction?: number;
  lateMs?: number;
  webhookSeed?: number;
}

/** Draws everything one fault of `kind` does (its offset aside) from `rng`; `processes` are the names a fault may hit. */
export function drawFault(kind: FaultKind, rng: Rng, processes: readonly string[]): Omit<PlannedFault, 'atMs'> {
  const timeout = (deliver: boolean) => ({ provider: rng.pick<Provider>(['meta', 'meta', 'nylas']), fault: { kind: rng.chance(0.5) ? 'timeout' : 'drop', deliver, hold_ms: 30_000 } });
  const withTimes = (p: { provider: Provider; fault: Record<string, unknown> }) => ({ kind, ...p, fault: { ...p.fault, times: rng.int(1, 3), label: kind } });
  switch (kind) {
    case 'process_kill':
      return { kind, ms: rng.int(2000, 8000), target: rng.pick(processes) };
    case 'broker_cut_one':
      return { kind, target: rng.pick(processes), ms: rng.int(2000, 10_000) };
    case 'broker_cut_all':
      return { kind, ms: rng.int(2000, 10_000) };
    case 'database_cut':
      return { kind, target: rng.pick(processes), ms: rng.int(2000, 8000) };
    case 'provider_timeout_after_accept':
      // Held past the dispatcher's send deadline (15 s), then answered if the client still waits.
      return withTimes(timeout(true));
    case 'provider_timeout_before_accept':
      return withTimes(timeout(false));
    case 'provider_5xx': {
      const provider = rng.pick<Provider>(['meta', 'meta', 'nylas']);
      const status = rng.pick([500, 502, 503]);
      return withTimes({ provider, fault: { kind: 'error', status, ...(provider === 'meta' ? { code: rng.pick([1, 2, 131000]) } : {}) } });
    }
    case 'provider_rate_limited':
      // Meta's pair rate limit (131056): too many messages to one person in a short time.
      return withTimes({ provider: 'meta', fault: { kind: 'error', status: 400, code: 131056, retry_after: rng.int(1, 10) } });
    case 'provider_slow': {
      const provider = rng.pick<Provider>(['meta', 'meta', 'nylas']);
      return withTimes({ provider, fault: { kind: 'latency', latency_ms: rng.int(1000, 8000) } });
    }
    case 'webhook_duplicate':
    case 'webhook_late':
    case 'webhook_out_of_order':
      return { kind, fraction: 0.3 + rng.next() * 0.4, ms: rng.int(5000, 15_000), lateMs: rng.int(3000, 15_000), webhookSeed: rng.int(0, 0x7fff_ffff) };
  }
}

/**
 * The run's fault schedule, drawn up front: each kind on its own stream forked from `rng` in
 * `FAULT_KINDS` order (so a kind's faults stay the same whatever the rates of the others), the
 * first within 1/rate minutes, then gaps of 0.5/rate to 1.5/rate minutes, until `durationMs`.
 * Sorted by offset.
 */
export function planFaults(rng: Rng, rates: FaultRates, durationMs: number, processes: readonly string[]): PlannedFault[] {
  const out: PlannedFault[] = [];
  for (const kind of FAULT_KINDS) {
    const stream = forkRng(rng);
    const rate = rates[kind] ?? 0;
    if (!(rate > 0)) continue;
    const period = 60_000 / rate;
    for (let at = stream.next() * period; at < durationMs; at += (0.5 + stream.next()) * period) out.push({ atMs: Math.round(at), ...drawFault(kind, stream, processes) });
  }
  return out.sort((a, b) => a.atMs - b.atMs || FAULT_KINDS.indexOf(a.kind) - FAULT_KINDS.indexOf(b.kind));
}

/** One fault done (or, for provider faults and webhook windows, started). */
export interface FaultEvent {
  kind: FaultKind;
  /** Epoch ms. */
  at: number;
  /** What it hit and for how long, e.g. `messaging#2 db 4.2 s`. */
  detail: string;
}

/** A provider stand-in of the sandbox (apps/sandbox). */
type Provider = 'meta' | 'nylas';

/** The webhook-fault setting of the Meta sandbox each webhook kind turns on (MetaSettings.webhook_faults). */
const WEBHOOK_SETTING: Partial<Record<FaultKind, 'duplicate' | 'late' | 'out_of_order'>> = {
  webhook_duplicate: 'duplicate',
  webhook_late: 'late',
  webhook_out_of_order: 'out_of_order',
};

/** What a provider stand-in's control API says about the faults its calls consumed. */
interface TakenFault {
  fault: { label?: string };
}

/**
 * Injects faults into a `ChaosPlatform` on the schedule `planFaults` drew from the seed, until
 * `stop()`: each planned fault at its offset from `start()`. At most one process is down at a time:
 * a kill planned while another process is down (or of a process not running) is skipped and logged,
 * not counted — the only part of the schedule the machine's speed decides.
 *
 * Counts (`counts()`): infrastructure faults per episode; provider faults per call that consumed
 * one (a fault queued while nothing is sent hits nothing, and is not counted); webhook faults per
 * webhook misdelivered (the sandbox marks each).
 */
export class FaultInjector {
  readonly events: FaultEvent[] = [];
  /** What went wrong while healing (a process that did not come back): each is a finding. */
  readonly problems: string[] = [];
  /** The schedule of the run (set by `start`). */
  plan: PlannedFault[] = [];
  private readonly planRng: Rng;
  private readonly streams = new Map<FaultKind, Rng>();
  private readonly timers = new Set<NodeJS.Timeout>();
  private readonly cuts = new Map<TcpProxy, number>();
  private readonly down = new Set<ChaosProcess>();
  private readonly restarts = new Set<Promise<void>>();
  private running = false;
  private halted = false;
  private startedAt = 0;
  private final?: Partial<Record<FaultKind, number>>;

  constructor(
    private readonly platform: ChaosPlatform,
    rng: Rng,
    private readonly rates: FaultRates,
    private readonly log: (line: string) => void = () => undefined,
  ) {
    this.planRng = forkRng(rng);
    for (const kind of FAULT_KINDS) this.streams.set(kind, forkRng(rng));
  }

  /** The schedule of a run of `durationMs` on this platform (what `start` will do), drawn from the seed. */
  planFor(durationMs: number): PlannedFault[] {
    return planFaults(
      this.planRng,
      this.rates,
      durationMs,
      this.platform.processes.map((p) => p.name),
    );
  }

  /** Starts the schedule of a run of `durationMs` (or `plan`, from `planFor`). */
  start(durationMs: number, plan?: PlannedFault[]): void {
    this.plan = plan ?? this.planFor(durationMs);
    this.running = true;
    this.startedAt = Date.now();
    for (const planned of this.plan) {
      const timer = setTimeout(() => {
        this.timers.delete(timer);
        if (!this.running) return;
        this.apply(planned).catch((err: Error) => this.problems.push(`${planned.kind} could not be injected: ${err.message}`));
      }, planned.atMs);
      this.timers.add(timer);
    }
  }

  /** Does one fault of `kind` now, drawn from its own stream (exposed so a test can do each kind on demand). */
  inject(kind: FaultKind): Promise<void> {
    return this.apply({
      atMs: 0,
      ...drawFault(
        kind,
        this.streams.get(kind)!,
        this.platform.processes.map((p) => p.name),
      ),
    });
  }

  /** Does one planned fault now. */
  async apply(f: PlannedFault): Promise<void> {
    const proc = (name: string | undefined) => this.platform.processes.find((p) => p.name === name);
    switch (f.kind) {
      case 'process_kill':
        return this.killOne(proc(f.target), f.target ?? '?', f.ms!);
      case 'broker_cut_one': {
        const p = proc(f.target)!;
        return this.cut(f.kind, [p.amqp!], f.ms!, `${p.name} amqp`);
      }
      case 'broker_cut_all':
        return this.cut(
          f.kind,
          this.platform.processes.map((p) => p.amqp!),
          f.ms!,
          'every process amqp',
        );
      case 'database_cut': {
        const p = proc(f.target)!;
        return this.cut(f.kind, [p.db!], f.ms!, `${p.name} db`);
      }
      case 'provider_timeout_after_accept':
      case 'provider_timeout_before_accept':
      case 'provider_5xx':
      case 'provider_rate_limited':
      case 'provider_slow':
        return this.provider(f.kind, f.provider!, f.fault!);
      case 'webhook_duplicate':
      case 'webhook_late':
      case 'webhook_out_of_order':
        return this.webhookWindow(f);
    }
  }

  private note(kind: FaultKind, detail: string): void {
    this.events.push({ kind, at: Date.now(), detail });
    this.log(`fault ${kind}: ${detail}`);
  }

  /** SIGKILLs one replica (never the sandbox), restarts it after `pauseMs` and waits until it is ready again. */
  private async killOne(victim: ChaosProcess | undefined, name: string, pauseMs: number): Promise<void> {
    // One process down at a time: the kill is skipped (not counted).
    if (!victim || !victim.alive || this.down.size > 0) {
      this.log(`fault process_kill: ${name} skipped (${victim?.alive ? 'another process is down' : 'not running'})`);
      return;
    }
    this.down.add(victim);
    this.note('process_kill', `${victim.name} SIGKILL, restart after ${(pauseMs / 1000).toFixed(1)} s`);
    await victim.kill('SIGKILL');
    const restart = (async () => {
      await this.sleep(pauseMs);
      try {
        // A halted run is being torn down: a restart now would outlive its platform.
        if (this.halted) return;
        victim.start();
        await victim.waitReady();
      } catch (err) {
        this.problems.push(`${victim.name} did not come back after its SIGKILL: ${(err as Error).message.slice(0, 800)}`);
      } finally {
        this.down.delete(victim);
      }
    })();
    this.restarts.add(restart);
    await restart;
    this.restarts.delete(restart);
  }

  /** Cuts `proxies` (open connections dropped, new ones refused) for `ms`; overlapping cuts of one proxy end with the last. */
  private async cut(kind: FaultKind, proxies: TcpProxy[], ms: number, what: string): Promise<void> {
    this.note(kind, `${what} cut for ${(ms / 1000).toFixed(1)} s`);
    for (const proxy of proxies) {
      this.cuts.set(proxy, (this.cuts.get(proxy) ?? 0) + 1);
      proxy.cut();
    }
    await this.sleep(ms);
    for (const proxy of proxies) this.release(proxy);
  }

  private release(proxy: TcpProxy): void {
    const left = (this.cuts.get(proxy) ?? 1) - 1;
    if (left > 0) {
      this.cuts.set(proxy, left);
      return;
    }
    this.cuts.delete(proxy);
    proxy.restore();
  }

  /** Queues the planned fault (1–3 times) for the next calls of a provider stand-in, labelled with the kind for counting. */
  private async provider(kind: FaultKind, provider: Provider, fault: Record<string, unknown>): Promise<void> {
    this.note(kind, `${provider} next ${String(fault.times)} call(s): ${JSON.stringify(fault)}`);
    await this.platform.sandbox.fault(provider, fault);
  }

  /** Turns one webhook misdelivery on for a fraction (30–70 %) of the Meta webhooks for 5–15 s. */
  private async webhookWindow(f: PlannedFault): Promise<void> {
    const setting = WEBHOOK_SETTING[f.kind]!;
    this.note(f.kind, `${Math.round(f.fraction! * 100)} % of webhooks for ${(f.ms! / 1000).toFixed(1)} s${setting === 'late' ? `, ${(f.lateMs! / 1000).toFixed(1)} s late` : ''}`);
    await this.platform.sandbox.metaSettings({ webhook_faults: { [setting]: f.fraction, seed: f.webhookSeed, ...(setting === 'late' ? { late_ms: f.lateMs } : {}) } });
    await this.sleep(f.ms!);
    await this.platform.sandbox.metaSettings({ webhook_faults: { [setting]: 0 } });
  }

  /** Resolves after `ms`, or at once when the injector stops. */
  private sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.timers.delete(timer);
        this.wakers.delete(wake);
        resolve();
      }, ms);
      const wake = () => {
        clearTimeout(timer);
        this.timers.delete(timer);
        resolve();
      };
      this.timers.add(timer);
      this.wakers.add(wake);
    });
  }
  private readonly wakers = new Set<() => void>();

  /**
   * Stops injecting and heals everything: pending pauses end now, every proxy opens, provider fault
   * queues and webhook faults are cleared, every process is up and ready. Then reads, from the
   * sandbox, how many provider and webhook faults actually hit a call.
   * @throws Error when a process does not get ready again (also listed in `problems`)
   */
  async stop(): Promise<Partial<Record<FaultKind, number>>> {
    this.cancel();
    await Promise.all([...this.restarts]);
    for (const proxy of this.cuts.keys()) proxy.restore();
    this.cuts.clear();
    await Promise.all((['meta', 'nylas', 'unipile'] as const).map((p) => this.platform.sandbox.clearFaults(p)));
    await this.platform.sandbox.metaSettings({ webhook_faults: { duplicate: 0, late: 0, out_of_order: 0 } });
    try {
      await this.platform.heal();
    } catch (err) {
      this.problems.push(`the platform did not heal: ${(err as Error).message.slice(0, 800)}`);
      throw err;
    }
    this.final = await this.countHits();
    return this.final;
  }

  /**
   * Stops injecting without healing, for a run being torn down (`npm run chaos` interrupted): no
   * planned fault starts, pending pauses end, a killed process is not restarted, cut proxies open.
   * Waits for nothing: the platform's `stop()` comes next and ends the rest.
   */
  halt(): void {
    this.halted = true;
    this.cancel();
    for (const proxy of this.cuts.keys()) proxy.restore();
    this.cuts.clear();
  }

  private cancel(): void {
    this.running = false;
    for (const timer of this.timers) clearTimeout(timer);
    this.timers.clear();
    for (const wake of [...this.wakers]) wake();
    this.wakers.clear();
  }

  /** Faults by kind (after `stop()`, provider and webhook faults count the calls and webhooks they hit). */
  counts(): Partial<Record<FaultKind, number>> {
    if (this.final) return this.final;
    const out: Partial<Record<FaultKind, number>> = {};
    for (const e of this.events) out[e.kind] = (out[e.kind] ?? 0) + 1;
    return out;
  }

  private async countHits(): Promise<Partial<Record<FaultKind, number>>> {
    const out: Partial<Record<FaultKind, number>> = {};
    for (const e of this.events) if (e.kind === 'process_kill' || e.kind.includes('_cut')) out[e.kind] = (out[e.kind] ?? 0) + 1;
    for (const provider of ['meta', 'nylas'] as const) {
      const { taken } = await this.platform.sandbox.get<{ taken: TakenFault[] }>(`/sandbox/control/${provider}/faults/taken?since_ms=${this.startedAt}`);
      for (const t of taken) {
        const label = t.fault.label as FaultKind | undefined;
        if (label && FAULT_KINDS.includes(label)) out[label] = (out[label] ?? 0) + 1;
      }
    }
    const { deliveries } = await this.platform.sandbox.get<{ deliveries: { fault?: string }[] }>('/sandbox/meta/webhooks');
    for (const d of deliveries) {
      const kind = `webhook_${d.fault}` as FaultKind;
      if (d.fault && FAULT_KINDS.includes(kind)) out[kind] = (out[kind] ?? 0) + 1;
    }
    return out;
  }
}
