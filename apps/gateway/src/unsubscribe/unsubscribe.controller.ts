import { Controller, Get, Inject, Post, Query, Res } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiQuery, ApiResponse, ApiSecurity, ApiTags } from '@nestjs/swagger';
import type { FastifyReply } from 'fastify';
import { type EmailSuppressionResult, OutreachSuppressionRpc } from '@touchpoint/contracts';
import { AppError, ErrorCode } from '@touchpoint/errors';
import type { Logger } from '@touchpoint/observability';
import { APP_CONFIG, LOGGER, RpcClient } from '@touchpoint/runtime';
import { verifyUnsubscribeToken } from '@touchpoint/text';
import { PublicRoute } from '../auth/auth.decorators.js';
import type { GatewayConfig } from '../gateway.config.js';
import { ErrorEnvelopeDto, WEBHOOK_SCHEMES } from '../http/openapi.js';
import { UnsubscribedDto } from '../webhooks/webhook-responses.dto.js';

/**
 * The unsubscribe link of our emails (seed 003 §4.7): `GET` (a person clicks "Unsubscribe: …")
 * and `POST` (RFC 8058 one-click from `List-Unsubscribe-Post`) on `/nylas/email/unsubscribe?token=…`.
 * The token is signed (organization + address): a tampered or unknown token answers 400 and writes
 * nothing. A good one suppresses the address and ends every live enrollment with it, through
 * outreach; the answer comes once that is stored and the address is on the dispatcher's list, so no
 * send asked for after the answer reaches it (503 otherwise, so a client may retry). Repeating
 * a click is harmless: the suppression is an upsert and ended enrollments stay ended.
 */
@ApiTags('unsubscribe')
@ApiSecurity(WEBHOOK_SCHEMES.unsubscribe)
@ApiQuery({ name: 'token', required: true, description: 'The signed token of the link', schema: { type: 'string' } })
@ApiResponse({ status: 400, description: '`validation_failed`: the token is tampered with or unknown; nothing is written', type: ErrorEnvelopeDto })
@ApiResponse({ status: 503, description: '`service_unavailable`: not stored; try again', type: ErrorEnvelopeDto })
@PublicRoute()
@Controller('nylas/email/unsubscribe')
export class UnsubscribeController {
  constructor(
    private readonly rpc: RpcClient,
    @Inject(APP_CONFIG) private readonly config: GatewayConfig,
    @Inject(LOGGER) private readonly logger: Logger,
  ) {}

  @Get()
  @ApiOperation({
    summary: 'Unsubscribe by clicking the link: the address is suppressed and its live enrollments end',
    description: 'The link of every outreach email. No API key: the signed token is the check. Repeating it is harmless.',
  })
  @ApiResponse({
    status: 200,
    description: 'A plain-text confirmation',
    content: { 'text/plain': { schema: { type: 'string' }, example: 'You are unsubscribed. You will receive no more emails from us at this address.' } },
  })
  async click(@Query('token') token: string | undefined, @Res() reply: FastifyReply): Promise<void> {
    await this.unsubscribe(token);
    reply.status(200).header('content-type', 'text/plain; charset=utf-8').send('You are unsubscribed. You will receive no more emails from us at this address.');
  }

  @Post()
  @ApiOperation({
    summary: 'One-click unsubscribe (RFC 8058, List-Unsubscribe-Post): the address is suppressed and its live enrollments end',
    description: 'What a mail client posts for `List-Unsubscribe-Post: List-Unsubscribe=One-Click`. No API key: the signed token is the check.',
  })
  @ApiOkResponse({ type: UnsubscribedDto })
  async oneClick(@Query('token') token: string | undefined, @Res() reply: FastifyReply): Promise<void> {
    await this.unsubscribe(token);
    reply.status(200).send({ unsubscribed: true });
  }

  /** @throws AppError validation_failed (bad token), service_unavailable (not stored) */
  private async unsubscribe(token: string | undefined): Promise<EmailSuppressionResult> {
    const claims = verifyUnsubscribeToken(token, this.config.UNSUBSCRIBE_TOKEN_SECRET);
    if (!claims) throw new AppError(ErrorCode.ValidationFailed, 'the unsubscribe link is not valid', { field: 'token' });
    try {
      const result = await this.rpc.call('outreach', OutreachSuppressionRpc.EmailUnsubscribe, claims);
      this.logger.info({ event: 'gateway.email_unsubscribed', organization_id: claims.organization_id, enrollments: result.enrollment_ids.length }, 'email unsubscribed by link');
      return result;
    } catch (err) {
      if (err instanceof AppError && err.code === ErrorCode.ValidationFailed) throw err;
      throw new AppError(ErrorCode.ServiceUnavailable, 'the unsubscribe could not be completed; try again (repeating it is harmless)', { code: err instanceof AppError ? err.code : undefined });
    }
  }
}
