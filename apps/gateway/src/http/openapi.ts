import { applyDecorators, type INestApplication } from '@nestjs/common';
import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import type { Logger } from '@touchpoint/observability';
import { ApiProperty, ApiPropertyOptional, ApiResponse, DocumentBuilder, type OpenAPIObject, SwaggerModule } from '@nestjs/swagger';
import { withListEnvelope } from './openapi-envelopes.js';

/** Name of the bearer security scheme in the OpenAPI document. */
export const BEARER_SCHEME = 'api-key';
/** Name of the operator console's session cookie scheme (`tp_session`), accepted wherever the bearer key is. */
export const SESSION_SCHEME = 'console-session';
/** Where the Swagger UI is served; the JSON document is at `${DOCS_PATH}/json`. */
export const DOCS_PATH = 'docs';

/** The inner object of the error envelope, for the document. */
export class ErrorBodyDto {
  @ApiProperty({ example: 'validation_failed', description: 'snake_case error code' })
  code!: string;

  @ApiProperty({ example: 'invalid request: scopes' })
  message!: string;

  @ApiPropertyOptional({
    description: 'Code-specific details: for validation_failed, `[{field, problems}]`; otherwise an object (the `field`, the id a conflict is about, the `error_id` of a 500)',
    oneOf: [
      { type: 'array', items: { type: 'object', additionalProperties: true } },
      { type: 'object', additionalProperties: true },
    ],
    example: [{ field: 'scopes', problems: ['each value in scopes must be one of ...'] }],
  })
  details?: unknown;
}

/** `{"error": {"code", "message", "details"}}`: the body of every failure (DESIGN §3). */
export class ErrorEnvelopeDto {
  @ApiProperty({ type: ErrorBodyDto })
  error!: ErrorBodyDto;
}

const ERROR_DESCRIPTIONS: Record<number, string> = {
  400: '`invalid_json` (malformed body) or `validation_failed` (details name each field)',
  401: '`unauthorized`: missing, unknown or revoked API key (or an unknown, ended or expired console session)',
  403: '`forbidden`: the key lacks the scope, or the route needs a key created by an admin who still is one; with the session cookie, also a failed CSRF check (details `{reason: "csrf"}`)',
  404: "`not_found`: no such resource in the caller's organization (another organization's id included)",
  409: "conflict with the resource's current state",
  413: '`payload_too_large`',
  415: '`unsupported_media_type`: send application/json',
  422: 'the request is well-formed but breaks a rule of the resource',
  503: '`service_unavailable`: the owning service did not answer within its deadline',
};

/** Documents error responses of a route with the envelope schema. */
export function ApiErrorResponses(...statuses: number[]): MethodDecorator & ClassDecorator {
  return applyDecorators(...statuses.map((status) => ApiResponse({ status, description: ERROR_DESCRIPTIONS[status] ?? 'error', type: ErrorEnvelopeDto })));
}

/** Security schemes of the webhook and unsubscribe routes: a provider's signature or a signed token, never an API key. */
export const WEBHOOK_SCHEMES = {
  meta: 'meta-signature',
  metaVerifyToken: 'meta-verify-token',
  nylas: 'nylas-signature',
  unipile: 'unipile-secret',
  unsubscribe: 'unsubscribe-token',
  crm: 'crm-signature',
} as const;

/**
 * Every tag an operation may use, with its description (Spectral's `operation-tag-defined` wants
 * each one declared at the top level). A new tag goes here too.
 */
export const API_TAGS: Record<string, string> = {
  auth: 'Who the calling API key is',
  sessions: 'Sign-in of the operator console: your API key exchanged for a session cookie',
  organizations: "The caller's organization",
  'api keys': 'API keys of the organization (admin)',
  members: 'Members of the organization and their roles (admin)',
  system: "Reachability of the platform's services",
  contacts: 'Contacts, their tags and notification preferences',
  conversations: 'The operator inbox: conversations, their messages, operator sends',
  notifications: 'Notifications over WhatsApp, email, SMS and in-app, and their templates',
  events: 'The real-time event feed (Server-Sent Events)',
  'followup-flows': 'Follow-up flows: drafts, published versions, status, stats (seed 002 answers are `{data: ...}`)',
  followups: 'Follow-up enrollments, the queue, approvals, one-off returns and settings (`{data: ...}`)',
  agents: 'The agents registry: which flows an agent may enroll into, and the returns it promised in a turn',
  crm: 'Lead and deal events from a CRM (an API key with crm:write, or the signed webhook)',
  outreach: 'AI outreach campaigns, enrollments, the review queue and the organization-wide stop',
  senders: 'WhatsApp numbers, email mailboxes and LinkedIn accounts to send from (admin)',
  suppressions: 'The do-not-contact list (admin)',
  outbox: 'Sends whose outcome is unknown, for a person to settle',
  webhooks: 'Provider deliveries (Meta, Nylas, Unipile), checked by signature or shared secret, not an API key',
  unsubscribe: 'The unsubscribe link of outreach emails, checked by its signed token',
};

/** What the document says about the deployment it describes. */
export interface OpenApiOptions {
  /** The port of the example server entry (default 3000). */
  port?: number;
  /** The header Unipile sends its shared secret in (UNIPILE_WEBHOOK_HEADER). */
  unipileHeader?: string;
}

/**
 * The OpenAPI document of every route registered on `app`. It reads only the controllers'
 * decorators, so an app created in Nest's preview mode (no database, no broker) gives the same
 * document as a running gateway: scripts/console/generate-client.ts types the console's client from it.
 */
export function createOpenApiDocument(app: INestApplication, options: OpenApiOptions = {}): OpenAPIObject {
  const docsUrl = `http://127.0.0.1:${options.port || 3000}/${DOCS_PATH}`;
  const builder = new DocumentBuilder()
    .setTitle('Touchpoint API')
    .setDescription(
      'REST API of Touchpoint. Authenticate with `Authorization: Bearer <API key>`, or, from the operator console, with the session cookie of `POST /sessions`. Every failure answers ' +
        '`{"error": {"code", "message", "details"}}`. Every response carries `x-request-id` (yours, if you send one). ' +
        "The webhook and unsubscribe routes take no API key: they check the provider's signature or the signed token.",
    )
    .setVersion('1')
    // Touchpoint is self-hosted and has no public licence or support address: whoever runs the
    // gateway is the contact. These are placeholders (`.invalid` is a reserved name) to replace.
    .setContact('Touchpoint operators', docsUrl, 'operators@touchpoint.invalid')
    .setLicense('Proprietary', docsUrl)
    .addServer('http://127.0.0.1:{port}', "A gateway you run (`npm start`); use your deployment's base URL in its place", {
      port: { default: String(options.port || 3000), description: 'GATEWAY_PORT' },
    })
    .addBearerAuth({ type: 'http', scheme: 'bearer', description: 'An API key secret (`tp_...`) from `npm run cli -- apikey:create`' }, BEARER_SCHEME)
    .addCookieAuth(
      'tp_session',
      {
        type: 'apiKey',
        in: 'cookie',
        name: 'tp_session',
        description:
          "The operator console's session cookie, set by `POST /sessions`. Used when no `Authorization` header is sent; POST, PUT, PATCH and DELETE then also need `X-CSRF-Token` (the session's `csrf_token`) and, when an `Origin` header is sent, the gateway's own origin.",
      },
      SESSION_SCHEME,
    )
    .addSecurity(WEBHOOK_SCHEMES.meta, { type: 'apiKey', in: 'header', name: 'X-Hub-Signature-256', description: '`sha256=` + the hex HMAC-SHA256 of the raw body with META_APP_SECRET' })
    .addSecurity(WEBHOOK_SCHEMES.metaVerifyToken, { type: 'apiKey', in: 'query', name: 'hub.verify_token', description: 'META_VERIFY_TOKEN, echoed by Meta when it verifies the subscription' })
    .addSecurity(WEBHOOK_SCHEMES.nylas, { type: 'apiKey', in: 'header', name: 'x-nylas-signature', description: 'The hex HMAC-SHA256 of the raw body with NYLAS_WEBHOOK_SECRET' })
    .addSecurity(WEBHOOK_SCHEMES.unipile, { type: 'apiKey', in: 'header', name: options.unipileHeader ?? 'unipile-auth', description: 'UNIPILE_WEBHOOK_SECRET, registered with the webhook (Unipile signs nothing)' })
    .addSecurity(WEBHOOK_SCHEMES.crm, { type: 'apiKey', in: 'header', name: 'x-touchpoint-signature', description: '`t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<raw body>">` with CRM_WEBHOOK_SECRET' })
    .addSecurity(WEBHOOK_SCHEMES.unsubscribe, { type: 'apiKey', in: 'query', name: 'token', description: 'The signed token of the unsubscribe link (organization and address, signed with UNSUBSCRIBE_TOKEN_SECRET)' });
  for (const [name, description] of Object.entries(API_TAGS)) builder.addTag(name, description);
  return describeScopes(withListEnvelope(SwaggerModule.createDocument(app, builder.build())));
}

/**
 * Serves the OpenAPI document at `/docs/json` (and `/docs/yaml`) and the Swagger UI at `/docs`.
 * The document is built once, on first request, after every route is registered. Each operation's
 * required scopes (the `x-required-scopes` extension the auth decorator adds) are also written
 * into its description, so the UI shows them. `test/gateway/openapi-document.e2e-spec.ts` lints it
 * with Spectral (`spectral:oas`, no warning) and types a client from it.
 */
export async function setupOpenApi(app: NestFastifyApplication, logger: Logger, options: OpenApiOptions = {}): Promise<void> {
  let document: OpenAPIObject | undefined;
  const build = (): OpenAPIObject => (document ??= createOpenApiDocument(app, options));
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
