import { Controller, Get, HttpCode, Inject, Post, Query, Req, Res } from '@nestjs/common';
import { ApiOperation, ApiQuery, ApiResponse, ApiSecurity, getSchemaPath } from '@nestjs/swagger';
import type { FastifyReply } from 'fastify';
import { AppError, ErrorCode } from '@touchpoint/errors';
import type { Logger } from '@touchpoint/observability';
import { APP_CONFIG, LOGGER } from '@touchpoint/runtime';
import { PublicRoute } from '../../auth/auth.decorators.js';
import type { GatewayConfig } from '../../gateway.config.js';
import type { RequestWithRawBody } from '../../http/raw-body.js';
import { isMetaVerifyToken, isValidMetaSignature } from './meta-signature.js';
import { MetaWebhookService } from './meta-webhook.service.js';
import { ErrorEnvelopeDto, WEBHOOK_SCHEMES } from '../../http/openapi.js';
import { ApiWebhookDelivery, ApiWebhooks, MetaDeliveryAnswerDto } from '../webhook-responses.dto.js';

/**
 * Meta (WhatsApp Cloud API) webhook ingress (DESIGN §3): the subscription challenge,
 * and deliveries checked against `X-Hub-Signature-256` over the RAW body before anything is read
 * from them. A bad signature answers 401 and stores nothing; a good one answers 200 only once the
 * owning services stored it, 503 otherwise (Meta then redelivers).
 */
@ApiWebhooks()
@PublicRoute()
@Controller('webhooks/meta')
export class MetaWebhookController {
  constructor(
    private readonly webhooks: MetaWebhookService,
    @Inject(APP_CONFIG) private readonly config: GatewayConfig,
    @Inject(LOGGER) private readonly logger: Logger,
  ) {}

  /** `hub.mode=subscribe` with our verify token → the challenge as plain text; anything else 403. */
  @Get()
  @ApiOperation({
    summary: 'Meta subscription check: answers hub.challenge as plain text when hub.verify_token is ours',
    description: 'Meta calls it once when the webhook is configured, with `hub.mode=subscribe`, `hub.verify_token` (META_VERIFY_TOKEN) and `hub.challenge`. No API key.',
  })
  @ApiSecurity(WEBHOOK_SCHEMES.metaVerifyToken)
  @ApiQuery({ name: 'hub.mode', required: true, schema: { type: 'string', enum: ['subscribe'] } })
  @ApiQuery({ name: 'hub.challenge', required: true, schema: { type: 'string', example: '1158201444' } })
  @ApiResponse({ status: 200, description: 'hub.challenge, exactly', content: { 'text/plain': { schema: { type: 'string' }, example: '1158201444' } } })
  @ApiResponse({ status: 403, description: '`forbidden`: the verify token does not match', content: { 'application/json': { schema: { $ref: getSchemaPath(ErrorEnvelopeDto) } } } })
  challenge(@Query() query: Record<string, unknown>, @Res() reply: FastifyReply): void {
    if (query['hub.mode'] === 'subscribe' && isMetaVerifyToken(query['hub.verify_token'], this.config.META_VERIFY_TOKEN) && typeof query['hub.challenge'] === 'string') {
      reply.status(200).header('content-type', 'text/plain; charset=utf-8').send(query['hub.challenge']);
      return;
    }
    reply.status(403).send(new AppError(ErrorCode.Forbidden, 'the verify token does not match').toEnvelope());
  }

  @Post()
  @HttpCode(200)
  @ApiOperation({
    summary: 'A WhatsApp Cloud API delivery (messages, statuses), checked against X-Hub-Signature-256 over the raw body',
    description: 'No API key: the signature is the check. A bad one answers 401 and stores nothing; 200 only once the owning services stored the delivery, else 503 (Meta redelivers).',
  })
  @ApiWebhookDelivery(WEBHOOK_SCHEMES.meta, { type: MetaDeliveryAnswerDto }, 'The webhook payload as Meta sends it (`object: whatsapp_business_account`, `entry[].changes[]`)')
  async receive(@Req() request: RequestWithRawBody): Promise<{ received: true; statuses: number; messages: number }> {
    if (!isValidMetaSignature(request.rawBody, request.headers['x-hub-signature-256'], this.config.META_APP_SECRET)) {
      this.logger.warn({ event: 'gateway.meta_webhook_bad_signature', request_id: request.id }, 'Meta webhook with a bad signature refused');
      throw new AppError(ErrorCode.Unauthorized, 'the X-Hub-Signature-256 signature does not match the body');
    }
    const result = await this.webhooks.deliver(request.body);
    return { received: true, statuses: result.statuses, messages: result.messages };
  }
}
