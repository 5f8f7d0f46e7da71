import { Body, Controller, HttpCode, Inject, Post, Req } from '@nestjs/common';
import { ApiHeader, ApiOkResponse, ApiOperation, ApiSecurity, ApiTags } from '@nestjs/swagger';
import { type CrmEventIngestResult, MessagingRpc, Scope } from '@touchpoint/contracts';
import { AppError, ErrorCode } from '@touchpoint/errors';
import type { Logger } from '@touchpoint/observability';
import { APP_CONFIG, LOGGER, RpcClient } from '@touchpoint/runtime';
import { Clock } from '@touchpoint/time';
import { type Caller, CurrentCaller, PublicRoute, RequireKey } from '../auth/auth.decorators.js';
import { ServiceForwarder } from '../forwarding/service-forwarder.js';
import type { GatewayConfig } from '../gateway.config.js';
import { ApiErrorResponses, WEBHOOK_SCHEMES } from '../http/openapi.js';
import { NUL_PROBLEM, nulFields } from '../http/unstorable-characters.js';
import type { RequestWithRawBody } from '../http/raw-body.js';
import { createValidationPipe } from '../http/validation.js';
import { CRM_SIGNATURE_HEADER, type CrmSignatureVerdict, verifyCrmSignature } from './crm-signature.js';
import { CrmEventAcceptedDto, CrmEventDto, CrmWebhookEventDto } from './dto/crm-events.dto.js';

const ACCEPTANCE_DESCRIPTION =
  'The event is stored and published before this answer (seed 000 "Trigger hooks"): `lead_created`, `lead_status_changed` and `deal_stage_changed` ' +
  "flows fire, and a lead.status_changed with `closed` stops the contact's live follow-ups (reason `lead_won` / `lead_lost`) and takes back their queued sends. " +
  'The same `event_id` again answers `duplicate: true` and publishes nothing. 422 `unknown_contact` when no contact of the organization matches.';

/** `POST /crm/events`: a CRM pushes lead and deal events with an API key of scope `crm:write`. */
@ApiTags('crm')
@Controller('crm')
export class CrmEventsController {
  constructor(private readonly forwarder: ServiceForwarder) {}

  @Post('events')
  @HttpCode(200)
  @RequireKey({ scopes: [Scope.CrmWrite] })
  @ApiOperation({ summary: 'Push a CRM event (lead created, lead status changed, deal stage changed)', description: ACCEPTANCE_DESCRIPTION })
  @ApiOkResponse({ type: CrmEventAcceptedDto })
  @ApiErrorResponses(400, 404, 422, 503)
  ingest(@CurrentCaller() caller: Caller, @Body() body: CrmEventDto): Promise<CrmEventIngestResult> {
    return this.forwarder.forward(caller, 'messaging', MessagingRpc.CrmEventIngest, body);
  }
}

/**
 * `POST /webhooks/crm`: the same events from a CRM that signs its deliveries instead of holding a
 * key. The signature is checked over the raw body before the body is read (401, nothing stored);
 * the answer is 200 only once messaging stored the event, 503 otherwise, so the CRM redelivers.
 */
/** What a refused CRM signature answers, by verdict (never the expected value). */
const CRM_SIGNATURE_REFUSALS: Record<Exclude<CrmSignatureVerdict, 'ok'>, string> = {
  missing: `the ${CRM_SIGNATURE_HEADER} header is missing`,
  malformed: `the ${CRM_SIGNATURE_HEADER} header must be t=<unix seconds>,v1=<64 hex digits>`,
  mismatch: 'the CRM webhook signature does not match the body',
  stale: 'the CRM webhook signature is outside the accepted time window (CRM_WEBHOOK_TOLERANCE_S)',
};

@ApiTags('crm')
@ApiSecurity(WEBHOOK_SCHEMES.crm)
@PublicRoute()
@Controller('webhooks/crm')
export class CrmWebhookController {
  private readonly validation = createValidationPipe();

  constructor(
    private readonly rpc: RpcClient,
    private readonly clock: Clock,
    @Inject(APP_CONFIG) private readonly config: GatewayConfig,
    @Inject(LOGGER) private readonly logger: Logger,
  ) {}

  @Post()
  @HttpCode(200)
  @ApiOperation({ summary: 'Signed CRM event webhook (HMAC-SHA256 with CRM_WEBHOOK_SECRET)', description: `${ACCEPTANCE_DESCRIPTION} 401 \`unauthorized\` on a missing, wrong or stale signature (older than CRM_WEBHOOK_TOLERANCE_S).` })
  @ApiHeader({ name: CRM_SIGNATURE_HEADER, required: true, description: '`t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<raw body>">`', example: 't=1790000000,v1=5257a869e7ecebeda32affa62cdca3fa51cad7e77a0e56ff536d0ce8e108d8bd' })
  @ApiOkResponse({ type: CrmEventAcceptedDto })
  @ApiErrorResponses(400, 401, 422, 503)
  async receive(@Req() request: RequestWithRawBody): Promise<CrmEventIngestResult> {
    // Our own webhook, unlike the providers': no field of a CRM event may hold U+0000, signed or not.
    const nul = [...nulFields(request.query), ...nulFields(request.body)];
    if (nul.length)
      throw new AppError(
        ErrorCode.ValidationFailed,
        `invalid request: ${nul.join(', ')}`,
        nul.map((field) => ({ field, problems: [NUL_PROBLEM] })),
      );
    const verdict = verifyCrmSignature(request.rawBody, request.headers[CRM_SIGNATURE_HEADER], this.config.CRM_WEBHOOK_SECRET, this.clock.now().getTime(), this.config.CRM_WEBHOOK_TOLERANCE_S);
    if (verdict !== 'ok') {
      this.logger.warn({ event: 'gateway.crm_webhook_bad_signature', request_id: request.id, verdict }, 'CRM webhook refused');
      throw new AppError(ErrorCode.Unauthorized, CRM_SIGNATURE_REFUSALS[verdict]);
    }
    const event = (await this.validation.transform(request.body, { type: 'body', metatype: CrmWebhookEventDto })) as CrmWebhookEventDto;
    return this.rpc.call('messaging', MessagingRpc.CrmEventIngest, { ...event });
  }
}
