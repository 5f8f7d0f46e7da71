import { type DynamicModule, Module, type Type } from '@nestjs/common';
import { APP_PIPE } from '@nestjs/core';
import { PlatformModule } from '@touchpoint/runtime';
import { AccountsModule } from './accounts/accounts.module.js';
import { ApiKeysModule } from './api-keys/api-keys.module.js';
import { AuthModule } from './auth/auth.module.js';
import { CrmRoutesModule } from './crm/crm.module.js';
import { ForwardingModule } from './forwarding/forwarding.module.js';
import type { GatewayConfig } from './gateway.config.js';
import { createValidationPipe } from './http/validation.js';
import { GatewayEntities, GatewayMigrations } from './migrations/index.js';
import { MembersModule } from './members/members.module.js';
import { MessagingRoutesModule } from './messaging/messaging-routes.module.js';
import { FollowupsRoutesModule } from './followups/followups-routes.module.js';
import { OrganizationsModule } from './organizations/organizations.module.js';
import { OutboxRoutesModule } from './outbox/outbox-routes.module.js';
import { OutreachRoutesModule } from './outreach/outreach.module.js';
import { SystemModule } from './system/system.module.js';
import { MetaWebhookModule } from './webhooks/meta/meta-webhook.module.js';
import { NylasWebhookModule } from './webhooks/nylas/nylas-webhook.module.js';
import { UnipileWebhookModule } from './webhooks/unipile/unipile-webhook.module.js';
import { UnsubscribeModule } from './unsubscribe/unsubscribe.module.js';
import { SendersRoutesModule } from './senders/senders.module.js';

/**
 * The route modules of the public API. To add routes, write a module and add it here; nothing else
 * needs wiring:
 *
 * - **Forwarding route** (the usual case): a controller that injects `ServiceForwarder`, marks
 *   each handler `@RequireKey({ scopes: [...], adminCreatedKey? })`, takes a validated DTO
 *   (`@Body()`, `@Query()`, `@Param()`; unknown fields are refused; query strings arrive as
 *   strings, so numeric query fields need `@Type(() => Number)`), gets the caller with
 *   `@CurrentCaller()`, and returns `forwarder.forward(caller, '<service>', '<rpc pattern>', dto)`.
 *   The guard has already answered 401/403, and 404 for a `customer_id` of another organization;
 *   a service that does not answer in time becomes 503. See forwarding/service-forwarder.ts.
 * - **Webhook ingress** (`webhooks/`): mark the controller `@PublicRoute()`, serve it under
 *   `/webhooks/...` and read the exact body bytes from `request.rawBody` (see http/raw-body.ts;
 *   RAW_BODY_PATH_PREFIXES in gateway.app.ts) to check the provider's signature.
 * - Document every route: `@ApiTags` (declared in http/openapi.ts `API_TAGS`), `@ApiOperation`,
 *   `@ApiOkResponse({ type })` / `@ApiCreatedResponse({ type })` with a DTO whose fields carry
 *   examples, and `@ApiErrorResponses(...)` for its failure statuses (401/403 come with
 *   `@RequireKey`); README "How to document a route". The document must pass Spectral with no warning.
 */
export const GATEWAY_ROUTE_MODULES: Type[] = [
  OrganizationsModule,
  ApiKeysModule,
  MembersModule,
  SystemModule,
  MessagingRoutesModule,
  FollowupsRoutesModule,
  OutreachRoutesModule,
  MetaWebhookModule,
  SendersRoutesModule,
  NylasWebhookModule,
  UnipileWebhookModule,
  UnsubscribeModule,
  OutboxRoutesModule,
  CrmRoutesModule,
];

/** The gateway (DESIGN §1): auth, scopes, tenancy, validation, OpenAPI, forwarding by RPC. */
@Module({})
export class GatewayModule {
  static forRoot(config: GatewayConfig, routeModules: Type[] = GATEWAY_ROUTE_MODULES): DynamicModule {
    return {
      module: GatewayModule,
      imports: [PlatformModule.forService({ service: 'gateway', config, entities: GatewayEntities, migrations: GatewayMigrations }), AccountsModule, AuthModule, ForwardingModule, ...routeModules],
      providers: [{ provide: APP_PIPE, useFactory: createValidationPipe }],
    };
  }
}
