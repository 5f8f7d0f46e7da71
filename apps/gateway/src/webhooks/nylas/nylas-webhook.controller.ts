import { Controller, Get, HttpCode, Inject, Post, Query, Req, Res } from '@nestjs/common';
import { ApiExcludeController } from '@nestjs/swagger';
import type { FastifyReply } from 'fastify';
import { AppError, ErrorCode } from '@touchpoint/errors';
import type { Logger } from '@touchpoint/observability';
import { APP_CONFIG, LOGGER } from '@touchpoint/runtime';
import { PublicRoute } from '../../auth/auth.decorators.js';
import type { GatewayConfig } from '../../gateway.config.js';
import type { RequestWithRawBody } from '../../http/raw-body.js';
import { isValidNylasSignature } from './nylas-signature.js';
import { type NylasDeliveryResult, NylasWebhookService } from './nylas-webhook.service.js';

/**
 * Nylas v3 webhook ingress (DESIGN §3): the destination challenge, and deliveries checked against
 * `x-nylas-signature` over the RAW body before anything is read. A bad signature answers 401 and
 * stores nothing; a good one answers 200 once the owner stored it, 503 otherwise (Nylas redelivers).
 */
@ApiExcludeController()
@PublicRoute()
@Controller('webhooks/nylas')
export class NylasWebhookController {
  constructor(
    private readonly webhooks: NylasWebhookService,
    @Inject(APP_CONFIG) private readonly config: GatewayConfig,
    @Inject(LOGGER) private readonly logger: Logger,
  ) {}

  /** `?challenge=X` → 200 with exactly X as the body (Nylas verifies the destination this way). */
  @Get()
  challenge(@Query('challenge') challenge: string | undefined, @Res() reply: FastifyReply): void {
    if (typeof challenge !== 'string' || challenge === '') {
      reply.status(400).send(new AppError(ErrorCode.ValidationFailed, 'challenge is required').toEnvelope());
      return;
    }
    reply.status(200).header('content-type', 'text/plain; charset=utf-8').send(challenge);
  }

  @Post()
  @HttpCode(200)
  async receive(@Req() request: RequestWithRawBody): Promise<{ received: true } & NylasDeliveryResult> {
    if (!isValidNylasSignature(request.rawBody, request.headers['x-nylas-signature'], this.config.NYLAS_WEBHOOK_SECRET)) {
      this.logger.warn({ event: 'gateway.nylas_webhook_bad_signature', request_id: request.id }, 'Nylas webhook with a bad signature refused');
      throw new AppError(ErrorCode.Unauthorized, 'the x-nylas-signature signature does not match the body');
    }
    return { received: true, ...(await this.webhooks.deliver(request.body)) };
  }
}
