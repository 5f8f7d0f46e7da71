import { IsBoolean, IsInt, IsString, Matches, Max, Min, Secret, ServiceConfig } from '@touchpoint/config';

/** Environment of the gateway (the public HTTP API); see libs/config for the shared variables. */
export class GatewayConfig extends ServiceConfig {
  @IsInt()
  @Min(0)
  @Max(65535)
  override PORT = 3000;

  /** Largest accepted request body, bytes; a larger one answers 413 `payload_too_large`. */
  @IsInt()
  @Min(1024)
  @Max(64 * 1024 * 1024)
  BODY_LIMIT_BYTES = 1024 * 1024;

  /** Deadline of a `platform.ping` sent by the `/system/services` routes, ms. */
  @IsInt()
  @Min(50)
  @Max(60_000)
  SERVICE_PING_TIMEOUT_MS = 1000;

  /** Meta app secret: `X-Hub-Signature-256` of every Meta webhook is an HMAC of the raw body with it. */
  @IsString()
  @Secret()
  META_APP_SECRET = 'sandbox-meta-app-secret';

  /** Token Meta echoes in the `GET /webhooks/meta` subscription challenge (`hub.verify_token`). */
  @IsString()
  @Secret()
  META_VERIFY_TOKEN = 'sandbox-meta-verify-token';

  /** Nylas webhook secret of our destination: `x-nylas-signature` is a hex HMAC-SHA256 of the raw body with it. */
  @IsString()
  @Secret()
  NYLAS_WEBHOOK_SECRET = 'sandbox-nylas-webhook-secret';

  /** Name of the header Unipile sends on every delivery with the shared secret (registered with the webhook). */
  @IsString()
  UNIPILE_WEBHOOK_HEADER = 'unipile-auth';

  /** The shared secret Unipile sends in UNIPILE_WEBHOOK_HEADER (Unipile signs nothing; this is the only check). */
  @IsString()
  @Secret()
  UNIPILE_WEBHOOK_SECRET = 'sandbox-unipile-webhook-secret';

  /**
   * Secret of the CRM events webhook (`POST /webhooks/crm`): `x-touchpoint-signature` is
   * `t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<raw body>">` with it.
   */
  @IsString()
  @Secret()
  CRM_WEBHOOK_SECRET = 'sandbox-crm-webhook-secret';

  /** How far a CRM webhook's signed time may be from ours, seconds; an older delivery is refused as a replay. */
  @IsInt()
  @Min(1)
  @Max(3600)
  CRM_WEBHOOK_TOLERANCE_S = 300;

  /** Key of the signed unsubscribe tokens (the dispatcher signs with the same key). */
  @IsString()
  @Secret()
  UNSUBSCRIBE_TOKEN_SECRET = 'sandbox-unsubscribe-token-secret';

  /**
   * Lifetime of an operator console session, seconds, counted from sign-in (absolute: using the
   * console does not extend it). Default 8 hours, a working day.
   */
  @IsInt()
  @Min(60)
  @Max(30 * 24 * 3600)
  CONSOLE_SESSION_TTL_S = 8 * 3600;

  /**
   * Marks the console's session cookie `Secure` on every answer. Without it the cookie is `Secure`
   * only when the sign-in came over https (as seen by the gateway, or `X-Forwarded-Proto` from a proxy).
   */
  @IsBoolean()
  CONSOLE_COOKIE_SECURE = false;

  /**
   * The console's public origin (`https://touchpoint.example.com`), which an `Origin` header of a
   * cookie-authenticated request must equal. Empty: the origin of the request's own `Host` header.
   */
  @IsString()
  @Matches(/^(|https?:\/\/[^/\s]+)$/, { message: 'CONSOLE_ORIGIN must be empty or scheme://host[:port] without a path' })
  CONSOLE_ORIGIN = '';

  /**
   * Whether a proxy in front of the gateway sets `X-Forwarded-Host` and `X-Forwarded-Proto`, so the
   * console's origin check (when CONSOLE_ORIGIN is empty) may read them. Off: any client can send
   * them, so the check uses the connection's scheme and `Host`.
   */
  @IsBoolean()
  TRUST_FORWARDED_HEADERS = false;

  /** Directory of the console's build (index.html and assets/), served at /console. Empty: `<repo>/dist/console`. */
  @IsString()
  CONSOLE_DIR = '';
}
