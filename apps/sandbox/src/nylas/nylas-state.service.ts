import { Inject, Injectable } from '@nestjs/common';
import { createHmac, randomUUID } from 'node:crypto';
import type { SandboxConfig } from '../sandbox.config.js';
import { WebhookSender } from '../webhooks/webhook-sender.js';

/** Injection token of the sandbox config inside the Nylas module. */
export const NYLAS_SANDBOX_CONFIG = Symbol('sandbox:nylas-config');
/** Name of the Nylas fault queue and request log in the control API. */
export const NYLAS_PROVIDER = 'nylas';

/** A message the Nylas stand-in holds (sent through it or simulated inbound). */
export interface NylasMessage {
  id: string;
  grant_id: string;
  thread_id: string;
  subject: string;
  body: string;
  from: { email: string; name?: string }[];
  to: { email: string; name?: string }[];
  date: number;
  folders: string[];
  reply_to_message_id?: string;
  headers: { name: string; value: string }[];
}

/** A grant of the stand-in's Nylas application, readable with the application's API key only. */
export interface NylasGrant {
  id: string;
  api_key: string;
  email: string;
  provider: string;
  created_at: number;
}

/** What the stand-in does on its own; changed through `POST /sandbox/nylas/settings`. */
export interface NylasSettings {
  /** Where notifications go; default `${GATEWAY_URL}/webhooks/nylas`. */
  webhook_url: string;
  /** Signs `x-nylas-signature`. */
  webhook_secret: string;
  /** The provider of each grant (`google`, `microsoft`, `imap`); unknown grants are `google`. */
  grant_providers: Record<string, string>;
}

/**
 * Messages, settings and webhook delivery of the Nylas v3 stand-in. Notifications are signed like
 * Nylas: `x-nylas-signature` = hex HMAC-SHA256(webhook secret, raw body) (fixtures/README.md).
 */
@Injectable()
export class NylasStateService {
  settings: NylasSettings;
  readonly messages = new Map<string, NylasMessage>();
  /** Grants made known through `POST /sandbox/nylas/grants` (grant id → grant). */
  readonly grants = new Map<string, NylasGrant>();
  private seq = 0;

  constructor(
    @Inject(NYLAS_SANDBOX_CONFIG) private readonly config: SandboxConfig,
    private readonly sender: WebhookSender,
  ) {
    this.settings = this.defaults();
  }

  defaults(): NylasSettings {
    return { webhook_url: `${this.config.GATEWAY_URL.replace(/\/+$/, '')}/webhooks/nylas`, webhook_secret: this.config.NYLAS_WEBHOOK_SECRET, grant_providers: {} };
  }

  reset(): void {
    this.settings = this.defaults();
    this.messages.clear();
    this.grants.clear();
  }

  nextId(prefix: string): string {
    return `${prefix}${(++this.seq).toString(16).padStart(12, '0')}${randomUUID().slice(0, 4)}`;
  }

  /** Posts one signed notification; answers the gateway's status (0 when it did not answer). */
  async notify(type: string, object: Record<string, unknown>, grantId: string): Promise<{ status: number; body: string }> {
    const payload = {
      specversion: '1.0',
      type,
      source: '/google/emails/realtime',
      id: randomUUID(),
      time: Math.floor(Date.now() / 1000),
      webhook_delivery_attempt: 1,
      data: { application_id: 'sandbox-application', ...(type === 'message.bounce_detected' ? { grant_id: grantId } : {}), object },
    };
    const raw = JSON.stringify(payload);
    const signature = createHmac('sha256', this.settings.webhook_secret).update(raw).digest('hex');
    try {
      return await this.sender.post(this.settings.webhook_url, raw, { 'content-type': 'application/json', 'x-nylas-signature': signature });
    } catch (err) {
      return { status: 0, body: (err as Error).message };
    }
  }
}
