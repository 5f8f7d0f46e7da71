import { Inject, Injectable } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import type { SandboxConfig } from '../sandbox.config.js';
import { WebhookSender } from '../webhooks/webhook-sender.js';

export const UNIPILE_SANDBOX_CONFIG = Symbol('sandbox:unipile-config');
/** Name of the Unipile fault queue and request log in the control API. */
export const UNIPILE_PROVIDER = 'unipile';

/**
 * How the account relates to a person, as the stand-in answers an invitation:
 * `connected` → 422 already connected; `held` → 422 cannot resend yet (a pending or recent one).
 */
export type UnipileRelation = 'connected' | 'held';

export interface UnipileSettings {
  webhook_url: string;
  /** The header and value sent with every delivery (Unipile signs nothing). */
  webhook_header: string;
  webhook_secret: string;
  /** The LinkedIn member id of each account (`account_info.user_id`). */
  account_users: Record<string, string>;
}

/** A LinkedIn account connected to the stand-in's Unipile workspace, readable with the workspace's API key only. */
export interface UnipileAccount {
  id: string;
  api_key: string;
  name: string;
  created_at: string;
}

/** Chats, relations and webhook delivery of the Unipile (API v1) stand-in. */
@Injectable()
export class UnipileStateService {
  settings: UnipileSettings;
  /** `${account_id}|${provider_id}` → relation. */
  readonly relations = new Map<string, UnipileRelation>();
  /** public identifier (lower case) → member id, for `GET /api/v1/users/{identifier}`. */
  readonly profiles = new Map<string, string>();
  /** chat id → { account, attendee provider id }. */
  readonly chats = new Map<string, { account_id: string; provider_id: string }>();
  /** Accounts made known through `POST /sandbox/unipile/accounts` (account id → account). */
  readonly accounts = new Map<string, UnipileAccount>();
  private seq = 0;

  constructor(
    @Inject(UNIPILE_SANDBOX_CONFIG) private readonly config: SandboxConfig,
    private readonly sender: WebhookSender,
  ) {
    this.settings = this.defaults();
  }

  defaults(): UnipileSettings {
    return { webhook_url: `${this.config.GATEWAY_URL.replace(/\/+$/, '')}/webhooks/unipile`, webhook_header: 'Unipile-Auth', webhook_secret: this.config.UNIPILE_WEBHOOK_SECRET, account_users: {} };
  }

  reset(): void {
    this.settings = this.defaults();
    this.relations.clear();
    this.chats.clear();
    this.profiles.clear();
    this.accounts.clear();
  }

  nextId(prefix: string): string {
    return `${prefix}${(++this.seq).toString().padStart(8, '0')}${randomUUID().slice(0, 6)}`;
  }

  /** Posts one `message_received` delivery with the shared-secret header. */
  async deliver(payload: Record<string, unknown>): Promise<{ status: number; body: string }> {
    try {
      return await this.sender.post(this.settings.webhook_url, JSON.stringify(payload), { 'content-type': 'application/json', [this.settings.webhook_header]: this.settings.webhook_secret });
    } catch (err) {
      return { status: 0, body: (err as Error).message };
    }
  }
}
