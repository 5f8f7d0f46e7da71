import { Controller, Inject } from '@nestjs/common';
import { PlatformRpc } from '@touchpoint/contracts';
import { OnRpc } from './rpc.js';
import { SERVICE_DEFINITION, type ServiceDefinition } from './tokens.js';

/** RPC every service answers, so callers and tests can tell it is consuming. */
@Controller()
export class PlatformRpcController {
  constructor(@Inject(SERVICE_DEFINITION) private readonly definition: ServiceDefinition) {}

  @OnRpc(PlatformRpc.Ping)
  ping(): { service: string; ok: true } {
    return { service: this.definition.service, ok: true };
  }
}
