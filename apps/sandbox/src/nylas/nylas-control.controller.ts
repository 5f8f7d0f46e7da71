import { BadRequestException, Body, Controller, Get, Post } from '@nestjs/common';
import { type NylasGrant, type NylasMessage, type NylasSettings, NylasStateService } from './nylas-state.service.js';

interface InboundRequest {
  grant_id: string;
  from: string;
  from_name?: string;
  subject?: string;
  /** HTML or text body. */
  body?: string;
  headers?: { name: string; value: string }[];
  /** Reply in the thread of this message (one we sent). */
  reply_to_message_id?: string;
  /** Notifications to fire, in order (default `['message.created']`): Nylas does not order them. */
  types?: string[];
}

/** Control API of the Nylas stand-in: simulate an inbound reply, a bounce; settings; reset. */
@Controller('sandbox/nylas')
export class NylasControlController {
  constructor(private readonly state: NylasStateService) {}

  /**
   * Makes a grant known, readable (`GET /v3/grants/{id}`) with its application's API key only:
   * `{ grant_id, api_key, email?, provider? }` → the grant.
   */
  @Post('grants')
  grant(@Body() body: { grant_id?: unknown; api_key?: unknown; email?: unknown; provider?: unknown }): NylasGrant {
    if (typeof body?.grant_id !== 'string' || body.grant_id === '' || typeof body.api_key !== 'string' || body.api_key === '') throw new BadRequestException('grant_id and api_key are required');
    const grant: NylasGrant = {
      id: body.grant_id,
      api_key: body.api_key,
      email: typeof body.email === 'string' ? body.email : `mailbox+${body.grant_id}@sandbox.example`,
      provider: typeof body.provider === 'string' ? body.provider : 'google',
      created_at: Math.floor(Date.now() / 1000),
    };
    this.state.grants.set(grant.id, grant);
    return grant;
  }

  @Post('settings')
  settings(@Body() body: Partial<NylasSettings>): NylasSettings {
    this.state.settings = { ...this.state.settings, ...body };
    return this.state.settings;
  }

  @Get('messages')
  messages(): { messages: NylasMessage[] } {
    return { messages: [...this.state.messages.values()] };
  }

  /** Stores an inbound message and fires its notification(s), signed. */
  @Post('inbound')
  async inbound(@Body() body: InboundRequest) {
    if (!body?.grant_id || !body.from) throw new BadRequestException('grant_id and from are required');
    const replied = body.reply_to_message_id ? this.state.messages.get(body.reply_to_message_id) : undefined;
    const message: NylasMessage = {
      id: this.state.nextId('in'),
      grant_id: body.grant_id,
      thread_id: replied?.thread_id ?? this.state.nextId('th'),
      subject: body.subject ?? (replied ? `Re: ${replied.subject}` : 'Hello'),
      body: body.body ?? '<div>Thanks for reaching out.</div>',
      from: [{ email: body.from, ...(body.from_name ? { name: body.from_name } : {}) }],
      to: replied?.from ?? [{ email: `mailbox+${body.grant_id}@sandbox.example` }],
      date: Math.floor(Date.now() / 1000),
      folders: ['INBOX'],
      ...(replied ? { reply_to_message_id: replied.id } : {}),
      headers: body.headers ?? [],
    };
    this.state.messages.set(message.id, message);
    const deliveries = [];
    for (const type of body.types ?? ['message.created']) {
      const { headers: _headers, ...object } = message;
      deliveries.push({ type, ...(await this.state.notify(type, object, message.grant_id)) });
    }
    return { message, deliveries };
  }

  /** Fires `message.bounce_detected` for `address` (fixtures/nylas/webhook-message-bounce-detected.json shape). */
  @Post('bounce')
  async bounce(@Body() body: { grant_id: string; address: string; origin_message_id?: string }) {
    if (!body?.grant_id || !body.address) throw new BadRequestException('grant_id and address are required');
    const object = {
      bounce_reason: 'The mailbox is unavailable.',
      bounce_date: new Date().toUTCString(),
      bounced_addresses: body.address,
      type: 'mailbox_unavailable',
      code: '550',
      grant_id: body.grant_id,
      origin: { to: [body.address], from: `mailbox+${body.grant_id}@sandbox.example`, subject: 'sandbox', id: body.origin_message_id ?? this.state.nextId('sb') },
    };
    return this.state.notify('message.bounce_detected', object, body.grant_id);
  }

  @Post('reset')
  reset() {
    this.state.reset();
    return { reset: true };
  }
}
