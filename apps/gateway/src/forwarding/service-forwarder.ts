import { Inject, Injectable } from '@nestjs/common';
import { Histogram } from 'prom-client';
import { PlatformRpc, type RpcAnswer, type RpcPattern, type RpcRequest, type ServiceName } from '@touchpoint/contracts';
import { AppError, ErrorCode } from '@touchpoint/errors';
import { METRIC_PREFIX, type Logger, Metrics } from '@touchpoint/observability';
import { LOGGER, RpcClient } from '@touchpoint/runtime';
import type { Caller } from '../auth/auth.decorators.js';

/** What a route gives for `P`: its request without `organization_id` (the caller's, added by `forward`). */
export type ForwardPayload<P extends RpcPattern> = Omit<RpcRequest<P>, 'organization_id'>;

/** `payload` may be left out only when every field of the pattern's request but the tenant is optional. */
type ForwardArgs<P extends RpcPattern> = Record<string, never> extends ForwardPayload<P> ? [payload?: ForwardPayload<P>, timeoutMs?: number] : [payload: ForwardPayload<P>, timeoutMs?: number];

/**
 * Hands a request to the service that owns it, by RPC with a deadline (DESIGN §1: the gateway holds
 * no business logic). A service that does not answer in time becomes 503 `service_unavailable`
 * (never a hang); an AppError thrown by the service comes back as the same error and status.
 *
 * A forwarding route, in full (the guard has already checked key, scope and tenant):
 *
 * ```ts
 * @ApiTags('flows')
 * @Controller('ai/followup-flows')
 * export class FlowsController {
 *   constructor(private readonly forwarder: ServiceForwarder) {}
 *
 *   @Get()
 *   @RequireKey({ scopes: [Scope.AgentsRead] })          // + adminCreatedKey: true where seed 002 says so
 *   @ApiOkResponse({ type: FlowListDto })
 *   @ApiErrorResponses(400, 404, 503)
 *   list(@CurrentCaller() caller: Caller, @Query() query: ListFlowsQuery) {  // DTO validated by the global pipe
 *     return this.forwarder.forward(caller, 'followups', FollowupsRpc.ListFlows, query);
 *   }
 * }
 * ```
 */
@Injectable()
export class ServiceForwarder {
  private readonly seconds: Histogram<'service' | 'pattern' | 'outcome'>;

  constructor(
    private readonly rpc: RpcClient,
    metrics: Metrics,
    @Inject(LOGGER) private readonly logger: Logger,
  ) {
    this.seconds = new Histogram({
      name: `${METRIC_PREFIX}gateway_forward_seconds`,
      help: 'Time of an RPC forwarded by the gateway to a service, by outcome (ok or the error code), seconds',
      labelNames: ['service', 'pattern', 'outcome'],
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
      registers: [metrics.registry],
    });
  }

  /**
   * Calls `pattern` on `service` with `payload` plus the caller's `organization_id` (which always
   * wins over anything in the payload: the service scopes every query by it).
   * @param timeoutMs deadline, ms (default RPC_TIMEOUT_MS)
   * @throws AppError service_unavailable after the deadline; the service's own AppError otherwise
   */
  forward<P extends RpcPattern>(caller: Caller, service: ServiceName, pattern: P, ...[payload, timeoutMs]: ForwardArgs<P>): Promise<RpcAnswer<P>> {
    // The one place the caller's tenant joins the request: what the route gives plus `organization_id` is the pattern's request.
    return this.call(service, pattern, { ...payload, organization_id: caller.organizationId } as RpcRequest<P>, timeoutMs);
  }

  /**
   * Pings a service's RPC server (`platform.ping`).
   * @returns the round trip, ms
   * @throws AppError service_unavailable when it does not answer within `timeoutMs`
   */
  async ping(service: ServiceName, timeoutMs: number): Promise<number> {
    const started = performance.now();
    await this.call(service, PlatformRpc.Ping, {}, timeoutMs);
    return Math.round((performance.now() - started) * 10) / 10;
  }

  private async call<P extends RpcPattern>(service: ServiceName, pattern: P, payload: RpcRequest<P>, timeoutMs?: number): Promise<RpcAnswer<P>> {
    const end = this.seconds.startTimer({ service, pattern });
    try {
      const result = await this.rpc.call(service, pattern, payload, timeoutMs);
      end({ outcome: 'ok' });
      return result;
    } catch (err) {
      const code = err instanceof AppError ? err.code : ErrorCode.Internal;
      end({ outcome: code });
      // A service's domain error (not_found, conflict...) is an answer, not a fault of the path.
      const level = code === ErrorCode.ServiceUnavailable || code === ErrorCode.Internal || code === ErrorCode.NoHandler ? 'warn' : 'debug';
      this.logger[level]({ event: 'gateway.forward_failed', service, pattern, code, err: (err as Error).message }, 'forwarded call failed');
      throw err;
    }
  }
}
