import { Controller, Get, HttpCode, Inject, Post, Query, Req, Res } from '@nestjs/common';
import { ApiOperation, ApiQuery, ApiResponse, getSchemaPath } from '@nestjs/swagger';
import type { FastifyReply } from 'fastify';
import { AppError, ErrorCode } from '@touchpoint/errors';
import type { Logger } from '@touchpoint/observability';
import { APP_CONFIG, LOGGER } from '@touchpoint/runtime';
import { PublicRoute } from '../../auth/auth.decorators.js';
import type { GatewayConfig } from '../../gateway.config.js';
import type { RequestWithRawBody } from '../../http/raw-body.js';
import { isValidNylasSignature } from './nylas-signature.js';
import { type NylasDeliveryResult, NylasWebhookService } from './nylas-webhook.service.js';
import { ErrorEnvelopeDto, WEBHOOK_SCHEMES } from '../../http/openapi.js';
import { ApiWebhookDelivery, ApiWebhooks, ProviderDeliveryAnswerDto } from '../webhook-responses.dto.js';

/**
 * Nylas v3 webhook ingress (DESIGN §3): the destination challenge, and deliveries checked against
 * `x-nylas-signature` over the RAW body before anything is read. A bad signature answers 401 and
 * stores nothing; a good one answers 200 once the owner stored it, 503 otherwise (Nylas redelivers).
 */
@ApiWebhooks()
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
  @ApiOperation({
    summary: 'Nylas destination check: answers the challenge as plain text',
    description: 'Nylas calls it when the destination is created, with `challenge`; it checks the answer is exactly that value. No API key and no signature.',
    security: [],
  })
  @ApiQuery({ name: 'challenge', required: true, schema: { type: 'string', example: 'a1b2c3d4' } })
  @ApiResponse({ status: 200, description: 'The challenge, exactly', content: { 'text/plain': { schema: { type: 'string' }, example: 'a1b2c3d4' } } })
  @ApiResponse({ status: 400, description: '`validation_failed`: no challenge', content: { 'application/json': { schema: { $ref: getSchemaPath(ErrorEnvelopeDto) } } } })
  challenge(@Query('challenge') challenge: string | undefined, @Res() reply: FastifyReply): void {
    if (typeof challenge !== 'string' || challenge === '') {
      reply.status(400).send(new AppError(ErrorCode.ValidationFailed, 'challenge is required').toEnvelope());
      return;
    }
    reply.status(200).header('content-type', 'text/plain; charset=utf-8').send(challenge);
  }

  @Post()
  @HttpCode(200)
  @ApiOperation({
    summary: 'A Nylas v3 notification (message created, bounce…), checked against x-nylas-signature over the raw body',
    description: 'No API key: the signature is the check. A bad one answers 401 and stores nothing; 200 once the owner stored it, else 503 (Nylas redelivers).',
  })
  @ApiWebhookDelivery(WEBHOOK_SCHEMES.nylas, { type: ProviderDeliveryAnswerDto }, 'The notification as Nylas sends it (`type`, `data.object`)')
  async receive(@Req() request: RequestWithRawBody): Promise<{ received: true } & NylasDeliveryResult> {
    if (!isValidNylasSignature(request.rawBody, request.headers['x-nylas-signature'], this.config.NYLAS_WEBHOOK_SECRET)) {
      this.logger.warn({ event: 'gateway.nylas_webhook_bad_signature', request_id: request.id }, 'Nylas webhook with a bad signature refused');
      throw new AppError(ErrorCode.Unauthorized, 'the x-nylas-signature signature does not match the body');
    }
    return { received: true, ...(await this.webhooks.deliver(request.body)) };
  }
}
