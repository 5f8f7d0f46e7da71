import { Controller, HttpCode, Inject, Post, Req } from '@nestjs/common';
import { ApiOperation } from '@nestjs/swagger';
import { timingSafeEqual } from 'node:crypto';
import { AppError, ErrorCode } from '@touchpoint/errors';
import type { Logger } from '@touchpoint/observability';
import { APP_CONFIG, LOGGER } from '@touchpoint/runtime';
import { PublicRoute } from '../../auth/auth.decorators.js';
import type { GatewayConfig } from '../../gateway.config.js';
import type { RequestWithRawBody } from '../../http/raw-body.js';
import { type UnipileDeliveryResult, UnipileWebhookService } from './unipile-webhook.service.js';
import { WEBHOOK_SCHEMES } from '../../http/openapi.js';
import { ApiWebhookDelivery, ApiWebhooks, ProviderDeliveryAnswerDto } from '../webhook-responses.dto.js';

/** Whether the header carries the shared secret (constant-time compare). */
export function isValidUnipileSecret(header: string | string[] | undefined, secret: string): boolean {
  if (typeof header !== 'string') return false;
  const given = Buffer.from(header, 'utf8');
  const expected = Buffer.from(secret, 'utf8');
  return given.length === expected.length && timingSafeEqual(given, expected);
}

/**
 * Unipile webhook ingress (DESIGN §3): Unipile signs nothing, so the shared secret registered with
 * the webhook (header UNIPILE_WEBHOOK_HEADER) is the check; a wrong one answers 401 and stores
 * nothing. A delivery answers 200 once stored and 503 on any failure, so Unipile redelivers.
 */
@ApiWebhooks()
@PublicRoute()
@Controller('webhooks/unipile')
export class UnipileWebhookController {
  constructor(
    private readonly webhooks: UnipileWebhookService,
    @Inject(APP_CONFIG) private readonly config: GatewayConfig,
    @Inject(LOGGER) private readonly logger: Logger,
  ) {}

  @Post()
  @HttpCode(200)
  @ApiOperation({
    summary: 'A Unipile delivery (LinkedIn messages, invitations), checked by the shared secret header',
    description: 'No API key: Unipile signs nothing, so the secret registered with the webhook (header UNIPILE_WEBHOOK_HEADER) is the check. A wrong one answers 401 and stores nothing; 200 once stored, else 503 (Unipile redelivers).',
  })
  @ApiWebhookDelivery(WEBHOOK_SCHEMES.unipile, { type: ProviderDeliveryAnswerDto }, 'The event as Unipile sends it')
  async receive(@Req() request: RequestWithRawBody): Promise<{ received: true } & UnipileDeliveryResult> {
    if (!isValidUnipileSecret(request.headers[this.config.UNIPILE_WEBHOOK_HEADER.toLowerCase()], this.config.UNIPILE_WEBHOOK_SECRET)) {
      this.logger.warn({ event: 'gateway.unipile_webhook_bad_secret', request_id: request.id }, 'Unipile webhook without the shared secret refused');
      throw new AppError(ErrorCode.Unauthorized, 'the Unipile webhook secret does not match');
    }
    return { received: true, ...(await this.webhooks.deliver(request.body)) };
  }
}
