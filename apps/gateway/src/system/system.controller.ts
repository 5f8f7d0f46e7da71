import { Controller, Get, Inject, Param } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiProperty, ApiPropertyOptional, ApiTags } from '@nestjs/swagger';
import { IsString } from 'class-validator';
import { Scope, SERVICES, type ServiceName } from '@touchpoint/contracts';
import { AppError, ErrorCode } from '@touchpoint/errors';
import { APP_CONFIG } from '@touchpoint/runtime';
import { RequireKey } from '../auth/auth.decorators.js';
import { ServiceForwarder } from '../forwarding/service-forwarder.js';
import type { GatewayConfig } from '../gateway.config.js';
import { ApiErrorResponses } from '../http/openapi.js';

class ServiceStatusDto {
  @ApiProperty({ enum: SERVICES }) service!: ServiceName;
  @ApiProperty({ enum: ['up', 'unavailable'] }) status!: 'up' | 'unavailable';
  @ApiPropertyOptional({ description: 'RPC round trip, ms (when up)', example: 1 }) latency_ms?: number;
  @ApiPropertyOptional({ description: 'Why it is unavailable', example: 'timeout' }) error?: string;
}

class ServicesDto {
  @ApiProperty({ type: ServiceStatusDto, isArray: true }) services!: ServiceStatusDto[];
}

class PingDto {
  @ApiProperty({ enum: SERVICES }) service!: ServiceName;
  @ApiProperty({ example: true }) ok!: true;
  @ApiProperty({ description: 'RPC round trip, ms', example: 1 }) latency_ms!: number;
}

class ServiceNameParams {
  @ApiProperty({ enum: SERVICES })
  @IsString()
  name!: string;
}

/**
 * Operators' view of the services behind the gateway, over the same RPC path every forwarded call
 * takes; each ping has a short deadline (SERVICE_PING_TIMEOUT_MS).
 */
@ApiTags('system')
@Controller('system/services')
@RequireKey({ scopes: [Scope.Admin] })
export class SystemController {
  constructor(
    private readonly forwarder: ServiceForwarder,
    @Inject(APP_CONFIG) private readonly config: GatewayConfig,
  ) {}

  @Get()
  @ApiOperation({ summary: 'Pings every service by RPC and reports which answer' })
  @ApiOkResponse({ type: ServicesDto })
  async list(): Promise<ServicesDto> {
    const services = await Promise.all(
      SERVICES.map(async (service): Promise<ServiceStatusDto> => {
        try {
          return { service, status: 'up', latency_ms: await this.forwarder.ping(service, this.config.SERVICE_PING_TIMEOUT_MS) };
        } catch (err) {
          return { service, status: 'unavailable', error: (err as Error).message };
        }
      }),
    );
    return { services };
  }

  @Get(':name/ping')
  @ApiOperation({ summary: 'Pings one service by RPC: 503 service_unavailable when it does not answer within the deadline' })
  @ApiOkResponse({ type: PingDto })
  @ApiErrorResponses(404, 503)
  async ping(@Param() params: ServiceNameParams): Promise<PingDto> {
    if (!(SERVICES as readonly string[]).includes(params.name)) throw new AppError(ErrorCode.NotFound, `no service named ${params.name}`);
    const service = params.name as ServiceName;
    return { service, ok: true, latency_ms: await this.forwarder.ping(service, this.config.SERVICE_PING_TIMEOUT_MS) };
  }
}
