import { BadRequestException, Body, Controller, Get, HttpCode, Post, Query } from '@nestjs/common';
import { FaultRegistry, type ReceivedCall } from '../control/fault-registry.service.js';
import { META_PROVIDER } from './meta.controller.js';
import { MetaNumbersService, type SandboxPhoneNumber } from './meta-numbers.service.js';
import { MetaServiceWindowService } from './meta-service-window.service.js';
import { type MetaSettings, MetaWebhooksService, SANDBOX_DISPLAY_NUMBER, type WebhookDelivery, type WebhookFaults } from './meta-webhooks.service.js';

/** Phone-number id the sandbox uses when a control call names none (the fixtures' id). */
const DEFAULT_PHONE_NUMBER_ID = '100000000000002';

/** Recipient wa_id of a status webhook for a message the sandbox did not send (the fixtures' contact). */
const DEFAULT_RECIPIENT = '5511987654321';

/**
 * Meta-specific controls (faults and the request log are in the generic `/sandbox/control/meta/...`):
 * settings of the status webhooks, a simulated INBOUND message, a status for a given wamid, and a
 * raw signed webhook.
 */
@Controller('sandbox/meta')
export class MetaControlController {
  private inboundSeq = 0;

  constructor(
    private readonly webhooks: MetaWebhooksService,
    private readonly faults: FaultRegistry,
    private readonly numbers: MetaNumbersService,
    private readonly windows: MetaServiceWindowService,
  ) {}

  /**
   * Makes a business number known, readable with its tokens only:
   * `{ phone_number_id, access_token, display_phone_number?, verified_name? }` → the number (a
   * known number gets one more token).
   */
  @Post('numbers')
  @HttpCode(200)
  addNumber(@Body() body: { phone_number_id?: unknown; access_token?: unknown; display_phone_number?: unknown; verified_name?: unknown }): SandboxPhoneNumber {
    if (typeof body?.phone_number_id !== 'string' || !/^\d+$/.test(body.phone_number_id) || typeof body.access_token !== 'string' || body.access_token === '') {
      throw new BadRequestException('phone_number_id (digits) and access_token are required');
    }
    return this.numbers.add({
      id: body.phone_number_id,
      access_token: body.access_token,
      display_phone_number: typeof body.display_phone_number === 'string' ? body.display_phone_number : SANDBOX_DISPLAY_NUMBER,
      verified_name: typeof body.verified_name === 'string' ? body.verified_name : 'Sandbox Business',
    });
  }

  /**
   * Expires an access token, as when a system user's token lapses or is revoked: from now on Graph
   * answers every call made with it 401, code 190, subcode 463. `{ access_token }` → `{ expired: true }`.
   */
  @Post('tokens/expire')
  @HttpCode(200)
  expireToken(@Body() body: { access_token?: unknown }): { expired: true } {
    if (typeof body?.access_token !== 'string' || body.access_token === '') throw new BadRequestException('access_token is required');
    this.numbers.expire(body.access_token);
    return { expired: true };
  }

  /**
   * Posts a webhook-level error (`value.errors[]`, no statuses and no messages), the way Meta
   * reports an asynchronous error about the number (Meta's "errors messages webhook" reference):
   * `{ code?, title?, message?, details?, phone_number_id? }`; default code 130429 (throughput).
   */
  @Post('errors')
  @HttpCode(200)
  async errors(@Body() body: { code?: number; title?: string; message?: string; details?: string; phone_number_id?: string }): Promise<WebhookDelivery> {
    const code = body?.code ?? 130429;
    if (!Number.isInteger(code)) throw new BadRequestException('code must be an integer');
    const title = body?.title ?? (code === 130429 ? 'Rate limit hit' : 'Error');
    const error = {
      code,
      title,
      message: body?.message ?? title,
      error_data: { details: body?.details ?? (code === 130429 ? 'Cloud API message throughput has been reached.' : title) },
      href: '/documentation/business-messaging/whatsapp/support/error-codes',
    };
    return this.webhooks.post('raw', this.webhooks.envelope(body?.phone_number_id ?? DEFAULT_PHONE_NUMBER_ID, { errors: [error] }));
  }

  /**
   * Posts a `system` message (the user changed number), shaped like Meta's system messages webhook:
   * no contacts array; `from` is the old number, `system.wa_id` the new WhatsApp id.
   * `{ from, wa_id, name?, type?, phone_number_id?, message_id? }`; `type` defaults to
   * `user_changed_number` (older Graph versions sent `customer_changed_number`).
   */
  @Post('system')
  @HttpCode(200)
  async system(@Body() body: { from?: string; wa_id?: string; name?: string; type?: string; phone_number_id?: string; message_id?: string }): Promise<WebhookDelivery & { message_id: string }> {
    if (typeof body?.from !== 'string' || !/^\d{8,15}$/.test(body.from)) throw new BadRequestException('from must be the old wa_id (digits)');
    if (typeof body.wa_id !== 'string' || !/^\d{8,15}$/.test(body.wa_id)) throw new BadRequestException('wa_id must be the new wa_id (digits)');
    const id = body.message_id ?? `wamid.${Buffer.from(`sandbox-sys:${process.pid}:${++this.inboundSeq}:${body.from}`).toString('base64')}`;
    const message = {
      from: body.from,
      id,
      timestamp: String(Math.floor(Date.now() / 1000)),
      type: 'system',
      system: { body: `User ${body.name ?? 'Ana Example'} changed from ${body.from} to ${body.wa_id}`, wa_id: body.wa_id, type: body.type ?? 'user_changed_number' },
    };
    return { ...(await this.webhooks.post('inbound', this.webhooks.envelope(body.phone_number_id ?? DEFAULT_PHONE_NUMBER_ID, { messages: [message] }))), message_id: id };
  }

  /** Partial `MetaSettings` → the settings now in force. */
  @Post('settings')
  @HttpCode(200)
  settings(@Body() body: Partial<MetaSettings>): MetaSettings {
    const next = { ...this.webhooks.settings };
    if (body.status_webhooks !== undefined) next.status_webhooks = Boolean(body.status_webhooks);
    if (body.statuses !== undefined) {
      if (!Array.isArray(body.statuses) || body.statuses.some((s) => !['sent', 'delivered', 'read'].includes(s))) throw new BadRequestException('statuses must be a list of sent, delivered, read');
      next.statuses = body.statuses;
    }
    if (body.status_delay_ms !== undefined) next.status_delay_ms = Math.max(0, Number(body.status_delay_ms) || 0);
    if (body.webhook_url !== undefined) next.webhook_url = String(body.webhook_url);
    if (body.app_secret !== undefined) next.app_secret = String(body.app_secret);
    if (body.webhook_retries !== undefined) next.webhook_retries = Math.max(0, Math.min(10, Number(body.webhook_retries) || 0));
    if (body.webhook_retry_delay_ms !== undefined) next.webhook_retry_delay_ms = Math.max(0, Math.min(60_000, Number(body.webhook_retry_delay_ms) || 0));
    if (body.display_numbers !== undefined) next.display_numbers = { ...next.display_numbers, ...body.display_numbers };
    if (body.service_window !== undefined) next.service_window = Boolean(body.service_window);
    if (body.webhook_faults !== undefined) next.webhook_faults = webhookFaults(next.webhook_faults, body.webhook_faults);
    this.webhooks.settings = next;
    return next;
  }

  /** Restores the default settings and forgets deliveries. */
  @Post('reset')
  @HttpCode(200)
  reset(): { reset: true } {
    this.webhooks.reset();
    this.numbers.reset();
    this.windows.reset();
    return { reset: true };
  }

  /**
   * Simulates an inbound WhatsApp message: posts a signed `messages` webhook shaped like
   * fixtures/meta/webhook-message-text.json to the gateway and answers with the delivery (the
   * gateway's status tells whether it stored it). Body: `{ from, text }` for a text message, or
   * `{ from, message: {type, ...} }` for any other type; optional `phone_number_id`, `name`,
   * `message_id`, `timestamp` (epoch s), `context_message_id`. The message opens the person's
   * customer-service window with the number at its `timestamp`.
   */
  @Post('inbound')
  @HttpCode(200)
  async inbound(
    @Body()
    body: {
      from?: string;
      text?: string;
      name?: string;
      phone_number_id?: string;
      message_id?: string;
      timestamp?: number;
      context_message_id?: string;
      message?: Record<string, unknown>;
    },
  ): Promise<WebhookDelivery & { message_id: string }> {
    if (typeof body?.from !== 'string' || !/^\d{8,15}$/.test(body.from)) throw new BadRequestException('from must be the sender wa_id (digits)');
    if (body.text === undefined && !body.message) throw new BadRequestException('give text or message');
    const phoneNumberId = body.phone_number_id ?? DEFAULT_PHONE_NUMBER_ID;
    const id = body.message_id ?? `wamid.${Buffer.from(`sandbox-in:${process.pid}:${++this.inboundSeq}:${body.from}`).toString('base64')}`;
    const timestamp = body.timestamp ?? Math.floor(Date.now() / 1000);
    // The person wrote: their window with this number opens at the message's time.
    this.windows.record(phoneNumberId, body.from, timestamp * 1000);
    const message: Record<string, unknown> = {
      from: body.from,
      id,
      timestamp: String(timestamp),
      ...(body.message ?? { type: 'text', text: { body: body.text } }),
    };
    if (body.context_message_id) message.context = { from: this.webhooks.displayNumberOf(phoneNumberId) ?? SANDBOX_DISPLAY_NUMBER, id: body.context_message_id };
    const payload = this.webhooks.envelope(phoneNumberId, { contacts: [{ profile: { name: body.name ?? 'Ana Example' }, wa_id: body.from }], messages: [message] });
    return { ...(await this.webhooks.deliver('inbound', payload)), message_id: id };
  }

  /**
   * Posts a status webhook for a message: `{ wamid, status, recipient_id?, biz_opaque_callback_data?,
   * errors?, phone_number_id? }`. When `wamid` is omitted, the message the sandbox accepted with
   * that `biz_opaque_callback_data` is used. A `recipient_id` or `phone_number_id` not given is the
   * one of the send the sandbox recorded for that message (Meta reports a status from the number
   * that sent it, about the person it went to); only for a wamid the sandbox never issued do the
   * defaults stand in.
   */
  @Post('status')
  @HttpCode(200)
  async status(@Body() body: { wamid?: string; status?: string; recipient_id?: string; biz_opaque_callback_data?: string; errors?: unknown[]; phone_number_id?: string }): Promise<WebhookDelivery> {
    if (typeof body?.status !== 'string' || body.status === '') throw new BadRequestException('status is required');
    const callbackData = body.biz_opaque_callback_data;
    const call = body.wamid ? this.sendOf((c) => c.provider_id === body.wamid) : callbackData ? this.sendOf((c) => c.context.biz_opaque_callback_data === callbackData) : undefined;
    const wamid = body.wamid ?? call?.provider_id;
    if (!wamid) throw new BadRequestException('wamid is required (or a biz_opaque_callback_data the sandbox accepted)');
    const recipient = body.recipient_id ?? call?.context.wa_id ?? DEFAULT_RECIPIENT;
    const phoneNumberId = body.phone_number_id ?? call?.context.phone_number_id ?? DEFAULT_PHONE_NUMBER_ID;
    const status = this.webhooks.statusObject({ wamid, status: body.status, recipient, callbackData: callbackData ?? null, errors: body.errors });
    return this.webhooks.deliver('status', this.webhooks.envelope(phoneNumberId, { statuses: [status] }));
  }

  /** The latest message send the Graph stand-in took (one with a wamid) that `matches`. */
  private sendOf(matches: (call: ReceivedCall) => boolean): ReceivedCall | undefined {
    return this.faults
      .received(META_PROVIDER)
      .reverse()
      .find((c) => c.operation === 'messages' && c.provider_id !== undefined && matches(c));
  }

  /** Signs and posts any payload (a fixture, a malformed body): `{ payload, signature? }`. */
  @Post('webhook')
  @HttpCode(200)
  async raw(@Body() body: { payload?: unknown }): Promise<WebhookDelivery> {
    if (body?.payload === undefined) throw new BadRequestException('payload is required');
    return this.webhooks.post('raw', body.payload);
  }

  /** Webhooks the sandbox posted, with the gateway's answers: `?since_seq=`. */
  @Get('webhooks')
  deliveries(@Query('since_seq') since?: string): { deliveries: WebhookDelivery[] } {
    return { deliveries: this.webhooks.list(Number(since ?? 0) || 0) };
  }
}

/** `current` with the fields of `body` that are given; 400 when a fraction is outside [0, 1]. */
function webhookFaults(current: WebhookFaults, body: unknown): WebhookFaults {
  if (!body || typeof body !== 'object') throw new BadRequestException('webhook_faults must be an object');
  const given = body as Record<string, unknown>;
  const next = { ...current };
  for (const key of ['duplicate', 'late', 'out_of_order'] as const) {
    if (given[key] === undefined) continue;
    const value = given[key];
    if (typeof value !== 'number' || !(value >= 0 && value <= 1)) throw new BadRequestException(`webhook_faults.${key} must be a fraction in [0, 1]`);
    next[key] = value;
  }
  for (const key of ['late_ms', 'seed'] as const) {
    if (given[key] === undefined) continue;
    const value = given[key];
    if (!Number.isInteger(value) || (value as number) < 0) throw new BadRequestException(`webhook_faults.${key} must be a non-negative integer`);
    next[key] = value as number;
  }
  return next;
}
