import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import { loadConfig, ServiceConfig } from '@touchpoint/config';
import { type ContactCreateData, type ContactView } from '@touchpoint/contracts';
import { RpcClient } from '@touchpoint/runtime';
import { createContact, createTestWorld, type TestWorld, untilServicesAnswer } from '@touchpoint/testing';
import { AiGatewayConfig } from '../../apps/ai-gateway/src/ai-gateway.config.js';
import { AiGatewayModule } from '../../apps/ai-gateway/src/ai-gateway.module.js';
import { ApiKeysModule } from '../../apps/gateway/src/api-keys/api-keys.module.js';
import { gatewayStartOptions } from '../../apps/gateway/src/gateway.app.js';
import { GatewayConfig } from '../../apps/gateway/src/gateway.config.js';
import { GatewayModule } from '../../apps/gateway/src/gateway.module.js';
import { OrganizationsModule } from '../../apps/gateway/src/organizations/organizations.module.js';
import { OutreachRoutesModule } from '../../apps/gateway/src/outreach/outreach.module.js';
import { MessagingConfig } from '../../apps/messaging/src/messaging.config.js';
import { MessagingModule } from '../../apps/messaging/src/messaging.module.js';
import { OutboxDispatcherConfig } from '../../apps/outbox-dispatcher/src/outbox-dispatcher.config.js';
import { OutboxDispatcherModule } from '../../apps/outbox-dispatcher/src/outbox-dispatcher.module.js';
import { OutreachConfig } from '../../apps/outreach/src/outreach.config.js';
import { OutreachModule } from '../../apps/outreach/src/outreach.module.js';
import type { ModelScriptStep, ReceivedModelRequest } from '../../apps/sandbox/src/model/model-state.service.js';
import { startSandbox } from '../../apps/sandbox/src/sandbox.app.js';
import { SandboxConfig } from '../../apps/sandbox/src/sandbox.config.js';
import { DispatcherStandIn, dispatcherStandIn } from './dispatcher-stand-in.js';
import { gatewayBuilders, httpClient } from '../gateway/gateway-world.js';
import type { SandboxHandle } from '../outbox/harness.js';

/** Everything an outreach end-to-end test runs against, on the real PostgreSQL and RabbitMQ. */
export interface OutreachWorld {
  world: TestWorld;
  outreach: NestFastifyApplication;
  rpc: RpcClient;
  dispatcher: DispatcherStandIn;
  /** The outreach schema of this world; `sql` replaces `{o}` with it. */
  schema: string;
  sql<T = Record<string, any>>(text: string, params?: unknown[]): Promise<T[]>;
  contact(org: string, data?: Partial<ContactCreateData>): Promise<ContactView>;
  /** Present with `{ model: true }`. */
  model?: { script(steps: ModelScriptStep[]): Promise<void>; requests(): Promise<ReceivedModelRequest[]>; reset(): Promise<void> };
  /** Present with `{ gateway: true }`. */
  http?: ReturnType<typeof httpClient>;
  builders?: ReturnType<typeof gatewayBuilders>;
  close(): Promise<void>;
}

/**
 * Starts messaging, the dispatcher stand-in and outreach (runner loop polling every 50 ms), and on
 * request ai-gateway with the sandbox model and the gateway with the outreach routes.
 */
export async function startOutreachWorld(label: string, options: { model?: boolean; gateway?: boolean; outreachEnv?: Record<string, string> } = {}): Promise<OutreachWorld> {
  const world = await createTestWorld(label);
  let sandbox: NestFastifyApplication | undefined;
  let sandboxUrl = 'http://127.0.0.1:9';
  if (options.model) {
    sandbox = await startSandbox(loadConfig(SandboxConfig, { PORT: '0', LOG_LEVEL: 'silent' }));
    sandboxUrl = (await sandbox.getUrl()).replace('[::1]', '127.0.0.1');
  }
  await world.start(AiGatewayModule.forRoot(world.config(AiGatewayConfig, { AI_BASE_URL: options.model ? `${sandboxUrl}/v1` : 'none' })));
  await world.start(MessagingModule.forRoot(world.config(MessagingConfig, { INSTANCE_SWEEP_INTERVAL_MS: '0', SUMMARIES: 'off' })));
  const stand = await world.start(dispatcherStandIn(world.config(ServiceConfig)));
  const outreach = await world.start(OutreachModule.forRoot(world.config(OutreachConfig, { OUTREACH_RUNNER_POLL_MS: '50', OUTREACH_RUN_RETRY_BASE_MS: '100', OUTREACH_AI_TIMEOUT_MS: '5000', ...(options.outreachEnv ?? {}) })));
  const rpc = outreach.get(RpcClient);
  await untilServicesAnswer(rpc, ['messaging', 'outbox-dispatcher', 'ai-gateway', 'outreach']);
  let http: OutreachWorld['http'];
  let builders: OutreachWorld['builders'];
  if (options.gateway) {
    const config = world.config(GatewayConfig);
    const gateway = await world.start(GatewayModule.forRoot(config, [OrganizationsModule, ApiKeysModule, OutreachRoutesModule]), gatewayStartOptions(config));
    http = httpClient((await gateway.getUrl()).replace('[::1]', '127.0.0.1'));
    builders = gatewayBuilders(gateway);
  }
  const control = async (method: string, path: string, body?: unknown) => {
    const res = await fetch(`${sandboxUrl}/sandbox/model/${path}`, { method, headers: body ? { 'content-type': 'application/json' } : {}, body: body ? JSON.stringify(body) : undefined });
    if (!res.ok) throw new Error(`sandbox control ${path}: ${res.status} ${await res.text()}`);
    return res.json() as Promise<Record<string, unknown>>;
  };
  const schema = world.schema('outreach');
  return {
    world,
    outreach,
    rpc,
    dispatcher: stand.get(DispatcherStandIn),
    schema,
    sql: (text, params) => world.sql(text.replaceAll('{o}', `"${schema}"`), params),
    contact: (org, data = {}) => createContact(rpc, org, data),
    model: options.model
      ? {
          script: async (steps) => void (await control('POST', 'script', { steps })),
          requests: async () => (await control('GET', 'requests')).requests as ReceivedModelRequest[],
          reset: async () => void (await control('POST', 'reset', {})),
        }
      : undefined,
    http,
    builders,
    close: async () => {
      await world.close();
      await sandbox?.close();
    },
  };
}

/**
 * Outreach with the real services behind it, pointed at the sandbox: ai-gateway (the sandbox
 * model), messaging, the outbox-dispatcher (the sandbox's Nylas and Unipile) and outreach, in
 * `world`. Returns the outreach app; `outreachEnv` adds to or overrides its test settings.
 */
export async function startOutreachToSandbox(world: TestWorld, sandbox: SandboxHandle, outreachEnv: Record<string, string> = {}): Promise<NestFastifyApplication> {
  await world.start(AiGatewayModule.forRoot(world.config(AiGatewayConfig, { AI_BASE_URL: `${sandbox.url}/v1` })));
  await world.start(MessagingModule.forRoot(world.config(MessagingConfig, { INSTANCE_SWEEP_INTERVAL_MS: '0', SUMMARIES: 'off' })));
  await world.start(OutboxDispatcherModule.forRoot(world.config(OutboxDispatcherConfig, { NYLAS_API_BASE_URL: sandbox.url, UNIPILE_API_BASE_URL: sandbox.url, OUTBOX_SWEEP_INTERVAL_MS: '0', OUTBOX_IDLE_POLL_MS: '100', UNSUBSCRIBE_BASE_URL: 'https://touchpoint.example' })));
  return world.start(OutreachModule.forRoot(world.config(OutreachConfig, { OUTREACH_RUNNER_POLL_MS: '50', OUTREACH_RUN_RETRY_BASE_MS: '100', OUTREACH_AI_TIMEOUT_MS: '5000', OUTREACH_SWEEP_INTERVAL_MS: '0', ...outreachEnv })));
}
