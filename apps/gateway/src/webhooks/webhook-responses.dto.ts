import { applyDecorators } from '@nestjs/common';
import { ApiBody, ApiOkResponse, ApiProperty, ApiPropertyOptional, ApiResponse, ApiSecurity, ApiTags } from '@nestjs/swagger';
import { ErrorEnvelopeDto } from '../http/openapi.js';

/** Answers of the webhook ingress routes, for the document. */

/** Answer of `POST /webhooks/meta`: how many statuses and messages the delivery carried. */
export class MetaDeliveryAnswerDto {
  @ApiProperty({ enum: [true], example: true }) received!: true;
  @ApiProperty({ example: 1 }) statuses!: number;
  @ApiProperty({ example: 0 }) messages!: number;
}

/** Answer of `POST /webhooks/nylas` and `POST /webhooks/unipile`. */
export class ProviderDeliveryAnswerDto {
  @ApiProperty({ enum: [true], example: true }) received!: true;
  @ApiProperty({ enum: ['stored', 'duplicate', 'bounced', 'ignored'], description: '`bounced`: Nylas only', example: 'stored' }) outcome!: string;
  @ApiPropertyOptional({ description: 'why it was ignored', example: 'unknown grant' }) reason?: string;
}

/** Answer of the one-click `POST /nylas/email/unsubscribe`. */
export class UnsubscribedDto {
  @ApiProperty({ enum: [true], example: true }) unsubscribed!: true;
}

/**
 * A provider's delivery route: tagged `webhooks`, checked by `scheme` (a signature header, never
 * an API key), the body any JSON object, and the failures every ingress answers.
 */
export function ApiWebhookDelivery(scheme: string, answer: Parameters<typeof ApiOkResponse>[0], bodyDescription: string): MethodDecorator {
  return applyDecorators(
    ApiSecurity(scheme),
    ApiBody({ description: bodyDescription, schema: { type: 'object', additionalProperties: true } }),
    ApiOkResponse(answer),
    ApiResponse({ status: 401, description: '`unauthorized`: the signature or secret does not match the raw body; nothing is stored', type: ErrorEnvelopeDto }),
    ApiResponse({ status: 413, description: '`payload_too_large`', type: ErrorEnvelopeDto }),
    ApiResponse({ status: 503, description: '`service_unavailable`: not stored; the provider redelivers', type: ErrorEnvelopeDto }),
  );
}

/** The `webhooks` tag (class decorator of each ingress controller). */
export const ApiWebhooks = (): ClassDecorator => ApiTags('webhooks');
