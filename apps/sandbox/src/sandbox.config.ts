import { IsInt, IsString, Max, Min } from '@touchpoint/config';

/**
 * Environment of the provider sandbox (DESIGN §7): a local stand-in for Meta, Nylas, Unipile and an
 * OpenAI-compatible model endpoint. Never deployed to production.
 */
export class SandboxConfig {
  @IsString()
  HOST = '127.0.0.1';

  @IsInt()
  @Min(0)
  @Max(65535)
  PORT = 3900;

  /** Where the sandbox posts provider webhooks (the gateway's base URL). */
  @IsString()
  GATEWAY_URL = 'http://127.0.0.1:3000';

  /** Meta app secret used to sign `X-Hub-Signature-256` on webhooks it fires. */
  @IsString()
  META_APP_SECRET = 'sandbox-meta-app-secret';

  /** Secret that signs `x-nylas-signature` on the Nylas webhooks it fires (the gateway's NYLAS_WEBHOOK_SECRET). */
  @IsString()
  NYLAS_WEBHOOK_SECRET = 'sandbox-nylas-webhook-secret';

  /** Shared secret it sends with the Unipile webhooks it fires (the gateway's UNIPILE_WEBHOOK_SECRET). */
  @IsString()
  UNIPILE_WEBHOOK_SECRET = 'sandbox-unipile-webhook-secret';

  @IsString()
  LOG_LEVEL = 'info';
}
