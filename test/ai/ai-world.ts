import { type DynamicModule, Module } from '@nestjs/common';
import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import { AiGatewayConfig } from '../../apps/ai-gateway/src/ai-gateway.config.js';
import { AiGatewayModule } from '../../apps/ai-gateway/src/ai-gateway.module.js';
import type { ModelScriptStep, ReceivedModelRequest } from '../../apps/sandbox/src/model/model-state.service.js';
import { startSandbox } from '../../apps/sandbox/src/sandbox.app.js';
import { SandboxConfig } from '../../apps/sandbox/src/sandbox.config.js';
import { loadConfig, ServiceConfig } from '@touchpoint/config';
import { AiClient, PlatformRpc } from '@touchpoint/contracts';
import { PlatformModule, RpcClient } from '@touchpoint/runtime';
import { createTestWorld, eventually, type TestWorld } from '@touchpoint/testing';

/** A test world with the sandbox, ai-gateway, and a caller service that reaches it over real RPC. */
export interface AiWorld {
  world: TestWorld;
  sandbox: NestFastifyApplication | undefined;
  gateway: NestFastifyApplication;
  /** `AiClient` over the caller service's `RpcClient`. */
  ai: AiClient;
  rpc: RpcClient;
  /** The sandbox's control API. */
  model: {
    script(steps: ModelScriptStep[]): Promise<void>;
    requests(): Promise<ReceivedModelRequest[]>;
    reset(): Promise<void>;
  };
  ai_schema: string;
  close(): Promise<void>;
}

/** A service with only the platform (no schema of its own to speak of), used as the RPC caller. */
function callerService(config: ServiceConfig): DynamicModule {
  @Module({})
  class CallerRoot {}
  return { module: CallerRoot, imports: [PlatformModule.forService({ service: 'followups', config, entities: [], migrations: [], rpc: false })] };
}

/**
 * Starts the world. `gatewayEnv` overrides ai-gateway's variables; `withSandbox: false` runs no
 * sandbox at all (then AI_BASE_URL should be none).
 */
export async function startAiWorld(label: string, gatewayEnv: Record<string, string> = {}, withSandbox = true): Promise<AiWorld> {
  const world = await createTestWorld(label);
  let sandbox: NestFastifyApplication | undefined;
  let sandboxUrl = 'http://127.0.0.1:9';
  if (withSandbox) {
    sandbox = await startSandbox(loadConfig(SandboxConfig, { PORT: '0', LOG_LEVEL: 'silent' }));
    sandboxUrl = (await sandbox.getUrl()).replace('[::1]', '127.0.0.1');
  }
  const gateway = await world.start(AiGatewayModule.forRoot(world.config(AiGatewayConfig, { AI_BASE_URL: `${sandboxUrl}/v1`, ...gatewayEnv })));
  const caller = await world.start(callerService(world.config(ServiceConfig)));
  const rpc = caller.get(RpcClient);
  // The RPC queue exists and ai-gateway consumes it before the first test call.
  await eventually(() => rpc.call('ai-gateway', PlatformRpc.Ping, {}, 2000), 20_000, 200);
  const control = async (method: string, path: string, body?: unknown) => {
    const res = await fetch(`${sandboxUrl}/sandbox/model/${path}`, {
      method,
      headers: body ? { 'content-type': 'application/json' } : {},
      body: body ? JSON.stringify(body) : undefined,
    });
    if (!res.ok) throw new Error(`sandbox control ${path}: ${res.status} ${await res.text()}`);
    return res.json() as Promise<Record<string, unknown>>;
  };
  return {
    world,
    sandbox,
    gateway,
    rpc,
    ai: new AiClient(rpc),
    ai_schema: world.schema('ai-gateway'),
    model: {
      script: async (steps) => void (await control('POST', 'script', { steps })),
      requests: async () => (await control('GET', 'requests')).requests as ReceivedModelRequest[],
      reset: async () => void (await control('POST', 'reset', {})),
    },
    close: async () => {
      await world.close();
      await sandbox?.close();
    },
  };
}
