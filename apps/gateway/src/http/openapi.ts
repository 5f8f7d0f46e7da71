import { applyDecorators } from '@nestjs/common';
import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import type { Logger } from '@touchpoint/observability';
import { ApiProperty, ApiPropertyOptional, ApiResponse, DocumentBuilder, type OpenAPIObject, SwaggerModule } from '@nestjs/swagger';

/** Name of the bearer security scheme in the OpenAPI document. */
export const BEARER_SCHEME = 'api-key';
/** Where the Swagger UI is served; the JSON document is at `${DOCS_PATH}/json`. */
export const DOCS_PATH = 'docs';

/** The inner object of the error envelope, for the document. */
export class ErrorBodyDto {
  @ApiProperty({ example: 'validation_failed', description: 'snake_case error code' })
  code!: string;

  @ApiProperty({ example: 'invalid request: scopes' })
  message!: string;

  @ApiPropertyOptional({ description: 'Code-specific details; for validation_failed, `[{field, problems}]`', example: [{ field: 'scopes', problems: ['each value in scopes must be one of ...'] }] })
  details?: unknown;
}

/** `{"error": {"code", "message", "details"}}`: the body of every failure (DESIGN §3). */
export class ErrorEnvelopeDto {
  @ApiProperty({ type: ErrorBodyDto })
  error!: ErrorBodyDto;
}

const ERROR_DESCRIPTIONS: Record<number, string> = {
  400: '`invalid_json` (malformed body) or `validation_failed` (details name each field)',
  401: '`unauthorized`: missing, unknown or revoked API key',
  403: '`forbidden`: the key lacks the scope, or the route needs a key created by an admin who still is one',
  404: '`not_found`: no such resource in the caller\'s organization (another organization\'s id included)',
  409: 'conflict with the resource\'s current state',
  413: '`payload_too_large`',
  415: '`unsupported_media_type`: send application/json',
  422: 'the request is well-formed but breaks a rule of the resource',
  503: '`service_unavailable`: the owning service did not answer within its deadline',
};

/** Documents error responses of a route with the envelope schema. */
export function ApiErrorResponses(...statuses: number[]): MethodDecorator & ClassDecorator {
  return applyDecorators(...statuses.map((status) => ApiResponse({ status, description: ERROR_DESCRIPTIONS[status] ?? 'error', type: ErrorEnvelopeDto })));
}

/**
 * Serves the OpenAPI document at `/docs/json` (and `/docs/yaml`) and the Swagger UI at `/docs`.
 * The document is built once, on first request, after every route is registered. Each operation's
 * required scopes (the `x-required-scopes` extension the auth decorator adds) are also written
 * into its description, so the UI shows them.
 */
export async function setupOpenApi(app: NestFastifyApplication, logger: Logger): Promise<void> {
  const config = new DocumentBuilder()
    .setTitle('Touchpoint API')
    .setDescription(
      'REST API of Touchpoint. Authenticate with `Authorization: Bearer <API key>`. Every failure answers ' +
        '`{"error": {"code", "message", "details"}}`. Every response carries `x-request-id` (yours, if you send one).',
    )
    .setVersion('1')
    .addBearerAuth({ type: 'http', scheme: 'bearer', description: 'An API key secret (`tp_...`) from `npm run cli -- apikey:create`' }, BEARER_SCHEME)
    .build();
  let document: OpenAPIObject | undefined;
  const build = (): OpenAPIObject => (document ??= describeScopes(SwaggerModule.createDocument(app, config)));
  // The UI's assets are served by @fastify/static, which Jest's module loader cannot load (it
  // requires an ES module); Swagger would then exit the process. Without it, serve the document only.
  const ui = await import('@fastify/static').then(
    () => true,
    (err: Error) => {
      logger.warn({ event: 'gateway.docs_ui_disabled', err: err.message }, 'Swagger UI disabled: @fastify/static could not be loaded');
      return false;
    },
  );
  SwaggerModule.setup(DOCS_PATH, app, build, { ui, jsonDocumentUrl: `${DOCS_PATH}/json`, yamlDocumentUrl: `${DOCS_PATH}/yaml`, customSiteTitle: 'Touchpoint API' });
}

function describeScopes(document: OpenAPIObject): OpenAPIObject {
  for (const item of Object.values(document.paths)) {
    for (const operation of Object.values(item as Record<string, { description?: string; 'x-required-scopes'?: string[]; 'x-admin-created-key'?: boolean }>)) {
      if (!operation || typeof operation !== 'object' || !('x-required-scopes' in operation)) continue;
      const scopes = operation['x-required-scopes'] ?? [];
      const lines = [`**Scopes:** ${scopes.length ? scopes.map((s) => `\`${s}\``).join(', ') : 'any valid key'}`];
      if (operation['x-admin-created-key']) lines.push('**Key created by an admin** (checked on every call: the creator must still be an active admin).');
      operation.description = [...lines, operation.description].filter(Boolean).join('\n\n');
    }
  }
  return document;
}
