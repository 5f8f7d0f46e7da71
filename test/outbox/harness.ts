import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import { loadConfig } from '@touchpoint/config';
import type { OutboxEnqueueData, OutboxPayload } from '@touchpoint/contracts';
import type { TestWorld } from '@touchpoint/testing';
import { FixedClock } from '@touchpoint/time';
import { OutboxDispatcherConfig } from '../../apps/outbox-dispatcher/src/outbox-dispatcher.config.js';
import { OutboxDispatcherModule } from '../../apps/outbox-dispatcher/src/outbox-dispatcher.module.js';
import { DrainService } from '../../apps/outbox-dispatcher/src/drain/drain.service.js';
import { EnqueueService } from '../../apps/outbox-dispatcher/src/enqueue/enqueue.service.js';
import { SendersService } from '../../apps/outbox-dispatcher/src/senders/senders.service.js';
import { SuppressionsService } from '../../apps/outbox-dispatcher/src/suppressions/suppressions.service.js';
import { SweepService } from '../../apps/outbox-dispatcher/src/sweep/sweep.service.js';
import { ResolutionService } from '../../apps/outbox-dispatcher/src/ambiguous/resolution.service.js';
import { SandboxConfig } from '../../apps/sandbox/src/sandbox.config.js';
import { startSandbox } from '../../apps/sandbox/src/sandbox.app.js';

/** A sandbox started in-process on a free port, with helpers for its control API. */
export class SandboxHandle {
  constructor(
    readonly app: NestFastifyApplication,
    readonly url: string,
  ) {}

  static async start(overrides: Record<string, string> = {}): Promise<SandboxHandle> {
    const app = await startSandbox(loadConfig(SandboxConfig, { PORT: '0', LOG_LEVEL: 'silent', GATEWAY_URL: 'http://127.0.0.1:9', ...overrides }));
    const sandbox = new SandboxHandle(app, (await app.getUrl()).replace('[::1]', '127.0.0.1'));
    await sandbox.post('/sandbox/meta/settings', { status_webhooks: false });
    return sandbox;
  }

  async post<T = unknown>(path: string, body: unknown): Promise<T> {
    const res = await fetch(`${this.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
    const text = await res.text();
    if (!res.ok) throw new Error(`${path} answered ${res.status}: ${text}`);
    return JSON.parse(text) as T;
  }

  async get<T = unknown>(path: string): Promise<T> {
    const res = await fetch(`${this.url}${path}`);
    return (await res.json()) as T;
  }

  /** Scripts faults for the next Meta calls. */
  fault(...faults: Record<string, unknown>[]): Promise<unknown> {
    return this.post('/sandbox/control/meta/faults', { faults });
  }

  /** Messages calls the Meta stand-in received (optionally only those to `waId`). */
  /** `at`: when the stand-in answered; `arrived_at`: when the request arrived (earlier by any held answer), epoch ms. */
  async received(waId?: string): Promise<{ seq: number; at: number; arrived_at: number; outcome: string; context: Record<string, string>; body: Record<string, unknown>; provider_id?: string }[]> {
    const { calls } = await this.get<{ calls: { seq: number; at: number; arrived_at: number; operation: string; outcome: string; context: Record<string, string>; body: Record<string, unknown>; provider_id?: string }[] }>('/sandbox/control/meta/received');
    return calls.filter((c) => c.operation === 'messages' && (!waId || c.context.wa_id === waId));
  }

  reset(): Promise<unknown> {
    return this.post('/sandbox/control/reset', {});
  }

  close(): Promise<void> {
    return this.app.close();
  }
}

/** Config of a dispatcher in a test world that talks to `sandbox`. */
export function dispatcherConfig(world: TestWorld, sandbox: SandboxHandle, overrides: Record<string, string> = {}): OutboxDispatcherConfig {
  return world.config(OutboxDispatcherConfig, {
    WHATSAPP_GRAPH_BASE_URL: sandbox.url,
    NYLAS_API_BASE_URL: sandbox.url,
    UNIPILE_API_BASE_URL: sandbox.url,
    OUTBOX_DRAIN_AUTOSTART: 'false',
    OUTBOX_SWEEP_INTERVAL_MS: '0',
    WHATSAPP_SEND_TIMEOUT_MS: '400',
    OUTBOX_DISPATCH_CONCURRENCY: '4',
    ...overrides,
  });
}

/** A dispatcher started in the world with a hand-moved clock, and its services. */
export interface Dispatcher {
  app: NestFastifyApplication;
  clock: FixedClock;
  drain: DrainService;
  enqueue: EnqueueService;
  senders: SendersService;
  suppressions: SuppressionsService;
  sweep: SweepService;
  resolution: ResolutionService;
  /** The sandbox the dispatcher talks to (its Graph, Nylas and Unipile). */
  sandbox: SandboxHandle;
}

export async function startDispatcher(world: TestWorld, sandbox: SandboxHandle, overrides: Record<string, string> = {}, clock = new FixedClock(new Date('2026-03-02T12:00:00Z'))): Promise<Dispatcher> {
  const app = await world.start(OutboxDispatcherModule.forRoot(dispatcherConfig(world, sandbox, overrides), { clock }));
  return {
    app,
    clock,
    drain: app.get(DrainService),
    enqueue: app.get(EnqueueService),
    senders: app.get(SendersService),
    suppressions: app.get(SuppressionsService),
    sweep: app.get(SweepService),
    resolution: app.get(ResolutionService),
    sandbox,
  };
}

let keySeq = 0;
/** Enqueue data with defaults: a text to `to` from the organization's default sender. */
export function textTo(organizationId: string, to: string, overrides: Partial<OutboxEnqueueData> = {}): OutboxEnqueueData {
  const payload: OutboxPayload = { type: 'text', body: `hello ${++keySeq}` };
  return { organization_id: organizationId, channel: 'whatsapp', to, idempotency_key: `test:${Date.now()}:${keySeq}`, payload, log_context: { message_id: `m-${keySeq}` }, requester: 'test', ...overrides };
}
