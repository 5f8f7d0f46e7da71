import { Injectable, type OnModuleDestroy } from '@nestjs/common';

/**
 * One scripted behaviour for the next call(s) of the model endpoint:
 * - `reply`: answer with this content (an object is sent as JSON text, a string as is);
 * - `timeout`: hold the request `delay_ms` (default 10 s) before answering normally;
 * - `http_error`: answer `status` (default 500) with an OpenAI-style error body;
 * - `invalid_json`: answer 200 with content that is not JSON.
 * `times` repeats the step for that many calls (default 1).
 */
export type ModelScriptStep = { times?: number } & ({ reply: unknown; usage?: { prompt_tokens: number; completion_tokens: number } } | { fault: 'timeout'; delay_ms?: number } | { fault: 'http_error'; status?: number; message?: string } | { fault: 'invalid_json' });

/** A request the model endpoint received, as the control API lists it. */
export interface ReceivedModelRequest {
  seq: number;
  received_at: string;
  model: string | null;
  task: string;
  /** Whether an `Authorization: Bearer …` header came with it. */
  authorized: boolean;
  response_format: unknown;
  messages: { role: string; content: string }[];
  /** What the sandbox did: `answered`, `timeout`, `http_<status>`, `invalid_json`, `scripted`. */
  outcome: string;
}

/** Default hold of a `timeout` step, ms: longer than any deadline a test sets. */
export const DEFAULT_TIMEOUT_HOLD_MS = 10_000;

/** The model sandbox's script of coming answers and its log of received requests. */
@Injectable()
export class ModelStateService implements OnModuleDestroy {
  private script: ModelScriptStep[] = [];
  private received: ReceivedModelRequest[] = [];
  private seq = 0;
  private readonly holds = new Set<() => void>();

  /** Appends steps to the script; returns how many calls are now scripted. */
  enqueue(steps: ModelScriptStep[]): number {
    for (const step of steps) for (let i = 0; i < Math.max(1, step.times ?? 1); i++) this.script.push({ ...step, times: 1 });
    return this.script.length;
  }

  /** The next scripted step, if any (consumed). */
  next(): ModelScriptStep | undefined {
    return this.script.shift();
  }

  record(request: Omit<ReceivedModelRequest, 'seq' | 'received_at' | 'outcome'>): ReceivedModelRequest {
    const entry: ReceivedModelRequest = { seq: ++this.seq, received_at: new Date().toISOString(), outcome: 'pending', ...request };
    this.received.push(entry);
    return entry;
  }

  requests(): ReceivedModelRequest[] {
    return [...this.received];
  }

  /** Forgets the script and the received requests, and releases held requests. */
  reset(): void {
    this.script = [];
    this.received = [];
    this.releaseHolds();
  }

  /** Waits `ms`, or less when `release` fires (client gone, sandbox stopping). */
  hold(ms: number, onClose: (release: () => void) => void): Promise<void> {
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
}
