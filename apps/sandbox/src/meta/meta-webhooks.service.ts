import { Inject, Injectable, type OnModuleDestroy } from '@nestjs/common';
import { createHash, createHmac } from 'node:crypto';
import { truncateText } from '@touchpoint/text';
import type { SandboxConfig } from '../sandbox.config.js';
import { WebhookSender } from '../webhooks/webhook-sender.js';

/** Injection token of the sandbox config inside the Meta module (set by `MetaSandboxModule.forRoot`). */
export const META_SANDBOX_CONFIG = Symbol('sandbox:meta-config');

/** Defaults of the fake business account, as in the fixtures (fixtures/README.md). */
export const SANDBOX_WABA_ID = '100000000000001';
export const SANDBOX_DISPLAY_NUMBER = '5511912345678';

/** What the Meta sandbox does after it accepts a message; changed through its control API. */
export interface MetaSettings {
  /** Fire status webhooks for accepted messages. */
  status_webhooks: boolean;
  /** Which statuses, in order (from sent, delivered, read). */
  statuses: ('sent' | 'delivered' | 'read')[];
  /** Delay before the first status and between statuses, ms. */
  status_delay_ms: number;
  /** Where webhooks go; default `${GATEWAY_URL}/webhooks/meta`. */
  webhook_url: string;
  /** Secret that signs `X-Hub-Signature-256`; default META_APP_SECRET. */
  app_secret: string;
  /** Deliveries retried this many times after a non-2xx answer or a network error (Meta retries). */
  webhook_retries: number;
  /** Pause before retry n is n × this, ms (Meta backs off for hours; a test needs seconds). */
  webhook_retry_delay_ms: number;
  /** Display number reported per phone number id (default the fixtures' number). */
  display_numbers: Record<string, string>;
  /**
   * Refuse free-form messages (anything but a template or a read receipt) to a person whose 24-hour
   * customer-service window is closed, with 131047 as Meta does. Off by default, so tests that
   * never simulate an inbound message can send text.
   */
  service_window: boolean;
  /** Misdeliveries of a fraction of the status and inbound webhooks (all 0 by default). */
  webhook_faults: WebhookFaults;
}

/**
 * How the sandbox misdelivers webhooks, as Meta does in production (its webhooks are at least once,
 * may arrive late, and carry no ordering guarantee): the chaos harness turns these on
 * for a while at random moments. Each fraction is in [0, 1].
 */
export interface WebhookFaults {
  /** Fraction of status and inbound webhooks posted twice (the copy 100–1,000 ms after the first). */
  duplicate: number;
  /** Fraction of status and inbound webhooks posted `late_ms` later than they would be. */
  late: number;
  /** How late a late webhook is, ms. An inbound one makes the control call that simulates it wait as long. */
  late_ms: number;
  /**
   * Fraction of accepted messages whose status webhooks are fired in reverse order (e.g. delivered
   * before sent). Statuses only: an inbound message has no order of its own to break.
   */
  out_of_order: number;
  /** Seeds which webhooks are picked: the same seed and the same order of webhooks pick the same ones. */
  seed: number;
}

/** The misdelivery a webhook suffered, as its delivery lists it. */
export type WebhookFaultKind = 'duplicate' | 'late' | 'out_of_order';

/** One webhook the sandbox posted, as the control API lists it. */
export interface WebhookDelivery {
  seq: number;
  at: string;
  kind: 'status' | 'inbound' | 'raw';
  payload: unknown;
  /** HTTP status of the last try, or 0 when it never got an answer. */
  status: number;
  response: string;
  tries: number;
  /** The scripted misdelivery this delivery is part of (`duplicate` marks the copy). */
  fault?: WebhookFaultKind;
}

/**
 * Fires the Meta webhooks the sandbox simulates (statuses of accepted sends, inbound messages),
 * signed like Meta: `X-Hub-Signature-256: sha256=<hex HMAC-SHA256(app secret, raw body)>`
 * (fixtures/README.md "Signature and authentication rules").
 */
@Injectable()
export class MetaWebhooksService implements OnModuleDestroy {
  settings: MetaSettings;
  private readonly deliveries: WebhookDelivery[] = [];
  private seq = 0;
  private readonly timers = new Set<NodeJS.Timeout>();
  /** How many fault decisions were drawn (the other input of `picked`). */
  private draws = 0;
  private readonly waits = new Set<() => void>();

  constructor(
    @Inject(META_SANDBOX_CONFIG) private readonly config: SandboxConfig,
    private readonly sender: WebhookSender,
  ) {
    this.settings = this.defaults();
  }

  defaults(): MetaSettings {
    return {
      status_webhooks: true,
      statuses: ['sent', 'delivered'],
      status_delay_ms: 50,
      webhook_url: `${this.config.GATEWAY_URL.replace(/\/+$/, '')}/webhooks/meta`,
      app_secret: this.config.META_APP_SECRET,
      webhook_retries: 2,
      webhook_retry_delay_ms: 200,
      display_numbers: {},
      service_window: false,
      webhook_faults: { duplicate: 0, late: 0, late_ms: 5000, out_of_order: 0, seed: 0 },
    };
  }

  /**
   * Whether this webhook suffers `kind`: a hash of (seed, draw number, kind) against the fraction,
   * so a seeded run picks the same webhooks again without a random source in the sandbox.
   */
  private picked(kind: WebhookFaultKind): boolean {
    const fraction = this.settings.webhook_faults[kind];
    if (!(fraction > 0)) return false;
    const digest = createHash('sha256').update(`${this.settings.webhook_faults.seed}:${++this.draws}:${kind}`).digest();
    return digest.readUInt32BE(0) / 0x1_0000_0000 < fraction;
  }

  /** Waits `ms`, or less when `reset` or shutdown comes first (a held control call must not hang). */
  private wait(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.waits.delete(done);
        resolve();
      };
      const timer = setTimeout(done, ms);
      this.waits.add(done);
    });
  }

  /**
   * Posts a status or inbound webhook under the scripted misdeliveries: late ones after `late_ms`,
   * duplicated ones once more shortly after (not awaited). Resolves with the first delivery.
   */
  async deliver(kind: 'status' | 'inbound', payload: unknown): Promise<WebhookDelivery> {
    const late = this.picked('late');
    const duplicate = this.picked('duplicate');
    if (late) await this.wait(this.settings.webhook_faults.late_ms);
    const first = await this.post(kind, payload, late ? 'late' : undefined);
    if (duplicate) {
      const timer = setTimeout(
        () => {
          this.timers.delete(timer);
          void this.post(kind, payload, 'duplicate');
        },
        100 + (this.draws % 10) * 100,
      );
      this.timers.add(timer);
    }
    return first;
  }

  displayNumberOf(phoneNumberId: string): string {
    return this.settings.display_numbers[phoneNumberId] ?? SANDBOX_DISPLAY_NUMBER;
  }

  /** The webhook envelope around one change value (shape of fixtures/meta/webhook-*.json). */
  envelope(phoneNumberId: string, value: Record<string, unknown>): Record<string, unknown> {
    return {
      object: 'whatsapp_business_account',
      entry: [
        {
          id: SANDBOX_WABA_ID,
          changes: [
            {
              value: { messaging_product: 'whatsapp', metadata: { display_phone_number: this.displayNumberOf(phoneNumberId), phone_number_id: phoneNumberId }, ...value },
              field: 'messages',
            },
          ],
        },
      ],
    };
  }

  /** A status object as Meta sends it (fixtures/meta/webhook-status-*.json). */
  statusObject(input: { wamid: string; status: string; recipient: string; callbackData?: string | null; errors?: unknown[]; timestamp?: number }): Record<string, unknown> {
    const status: Record<string, unknown> = {
      id: input.wamid,
      status: input.status,
      timestamp: String(input.timestamp ?? Math.floor(Date.now() / 1000)),
      recipient_id: input.recipient,
    };
    if (input.callbackData) status.biz_opaque_callback_data = input.callbackData;
    if (input.status === 'sent') {
      status.conversation = { id: `sandbox${input.wamid.slice(-24)}`, origin: { type: 'service' } };
      status.pricing = { billable: true, pricing_model: 'PMP', type: 'regular', category: 'service' };
    }
    if (input.status === 'failed') {
      status.errors = input.errors ?? [
        { code: 131026, title: 'Message undeliverable', message: 'Message undeliverable', error_data: { details: 'Message failed to send because the recipient could not be reached.' }, href: '/documentation/business-messaging/whatsapp/support/error-codes' },
      ];
    }
    return status;
  }

  /** Schedules the configured statuses for an accepted message (a no-op when turned off). */
  scheduleStatuses(phoneNumberId: string, wamid: string, recipient: string, callbackData: string | null): void {
    if (!this.settings.status_webhooks) return;
    const reversed = this.settings.statuses.length > 1 && this.picked('out_of_order');
    const statuses = reversed ? [...this.settings.statuses].reverse() : this.settings.statuses;
    statuses.forEach((status, i) => {
      const timer = setTimeout(
        () => {
          this.timers.delete(timer);
          const payload = this.envelope(phoneNumberId, { statuses: [this.statusObject({ wamid, status, recipient, callbackData })] });
          // A reversed sequence is marked on its first webhook only: one fault per message.
          if (reversed && i === 0) void this.post('status', payload, 'out_of_order');
          else void this.deliver('status', payload);
        },
        this.settings.status_delay_ms * (i + 1),
      );
      this.timers.add(timer);
    });
  }

  /** Signs and posts a payload, retrying like Meta; resolves with the last answer. */
  async post(kind: WebhookDelivery['kind'], payload: unknown, fault?: WebhookFaultKind): Promise<WebhookDelivery> {
    const raw = JSON.stringify(payload);
    const signature = `sha256=${createHmac('sha256', this.settings.app_secret).update(raw).digest('hex')}`;
    const delivery: WebhookDelivery = { seq: ++this.seq, at: new Date().toISOString(), kind, payload, status: 0, response: '', tries: 0, ...(fault ? { fault } : {}) };
    this.deliveries.push(delivery);
    if (this.deliveries.length > 10_000) this.deliveries.shift();
    for (let attempt = 0; attempt <= this.settings.webhook_retries; attempt++) {
      delivery.tries++;
      try {
        const answer = await this.sender.post(this.settings.webhook_url, raw, { 'content-type': 'application/json', 'x-hub-signature-256': signature, 'user-agent': 'facebookexternalua' });
        delivery.status = answer.status;
        delivery.response = truncateText(answer.body, 2000);
        if (answer.status >= 200 && answer.status < 300) break;
      } catch (err) {
        delivery.status = 0;
        delivery.response = (err as Error).message;
      }
      if (attempt < this.settings.webhook_retries) await new Promise((r) => setTimeout(r, this.settings.webhook_retry_delay_ms * (attempt + 1)));
    }
    return delivery;
  }

  list(sinceSeq = 0): WebhookDelivery[] {
    return this.deliveries.filter((d) => d.seq > sinceSeq);
  }

  reset(): void {
    this.settings = this.defaults();
    this.draws = 0;
    this.deliveries.length = 0;
    for (const t of this.timers) clearTimeout(t);
    this.timers.clear();
    for (const done of [...this.waits]) done();
  }

  onModuleDestroy(): void {
    for (const t of this.timers) clearTimeout(t);
    for (const done of [...this.waits]) done();
  }
}
