import { BadRequestException, Body, Controller, Post } from '@nestjs/common';
import { type UnipileAccount, type UnipileRelation, type UnipileSettings, UnipileStateService } from './unipile-state.service.js';

/** Control API of the Unipile stand-in: relations, an inbound chat message, settings, reset. */
@Controller('sandbox/unipile')
export class UnipileControlController {
  constructor(private readonly state: UnipileStateService) {}

  @Post('settings')
  settings(@Body() body: Partial<UnipileSettings>): UnipileSettings {
    this.state.settings = { ...this.state.settings, ...body };
    return this.state.settings;
  }

  /**
   * Connects a LinkedIn account to the workspace, readable (`GET /api/v1/accounts/{id}`) with the
   * workspace's API key only: `{ account_id, api_key, name? }` → the account.
   */
  @Post('accounts')
  account(@Body() body: { account_id?: unknown; api_key?: unknown; name?: unknown }): UnipileAccount {
    if (typeof body?.account_id !== 'string' || body.account_id === '' || typeof body.api_key !== 'string' || body.api_key === '') throw new BadRequestException('account_id and api_key are required');
    const account: UnipileAccount = { id: body.account_id, api_key: body.api_key, name: typeof body.name === 'string' ? body.name : 'Sandbox LinkedIn', created_at: new Date().toISOString() };
    this.state.accounts.set(account.id, account);
    return account;
  }

  /** Makes a public profile known: `GET /api/v1/users/{public_identifier}` answers its member id. */
  @Post('profiles')
  profile(@Body() body: { public_identifier: string; provider_id: string }) {
    if (!body?.public_identifier || !body.provider_id) throw new BadRequestException('public_identifier and provider_id are required');
    this.state.profiles.set(body.public_identifier.toLowerCase(), body.provider_id);
    return body;
  }

  /** Sets (or with `state: null` clears) how an account relates to a person. */
  @Post('relations')
  relation(@Body() body: { account_id: string; provider_id: string; state: UnipileRelation | null }) {
    if (!body?.account_id || !body.provider_id) throw new BadRequestException('account_id and provider_id are required');
    const key = `${body.account_id}|${body.provider_id}`;
    if (body.state) this.state.relations.set(key, body.state);
    else this.state.relations.delete(key);
    return { key, state: body.state };
  }

  /** Fires a `message_received` from `from_provider_id` (fixtures/unipile/webhook-message-received.json shape). */
  @Post('inbound')
  async inbound(@Body() body: { account_id: string; from_provider_id: string; text?: string; chat_id?: string; from_name?: string }) {
    if (!body?.account_id || !body.from_provider_id) throw new BadRequestException('account_id and from_provider_id are required');
    const chatId = body.chat_id ?? [...this.state.chats.entries()].find(([, c]) => c.account_id === body.account_id && c.provider_id === body.from_provider_id)?.[0] ?? this.state.nextId('chat');
    const self = this.state.settings.account_users[body.account_id] ?? 'ACoAASANDBOXACCOUNT';
    const payload = {
      account_id: body.account_id,
      account_type: 'LINKEDIN',
      account_info: { type: 'LINKEDIN', feature: 'classic', user_id: self },
      event: 'message_received',
      chat_id: chatId,
      timestamp: new Date().toISOString(),
      webhook_name: 'sandbox',
      message_id: this.state.nextId('msg'),
      message: body.text ?? 'Thanks for reaching out!',
      sender: { attendee_id: this.state.nextId('att'), attendee_name: body.from_name ?? 'Sandbox Person', attendee_provider_id: body.from_provider_id, attendee_profile_url: `https://www.linkedin.com/in/${body.from_provider_id}/` },
      attendees: [{ attendee_id: this.state.nextId('att'), attendee_name: 'Us', attendee_provider_id: self, attendee_profile_url: `https://www.linkedin.com/in/${self}/` }],
    };
    return { payload, delivery: await this.state.deliver(payload) };
  }

  /** The person accepts the account's invitation: the relation is recorded and `new_relation` fires (fixtures/unipile/webhook-new-relation.json shape). */
  @Post('accept')
  async accept(@Body() body: { account_id: string; provider_id: string; public_identifier?: string; full_name?: string }) {
    if (!body?.account_id || !body.provider_id) throw new BadRequestException('account_id and provider_id are required');
    this.state.relations.set(`${body.account_id}|${body.provider_id}`, 'connected');
    const slug = body.public_identifier ?? body.provider_id.toLowerCase();
    const payload = {
      event: 'new_relation',
      account_id: body.account_id,
      account_type: 'LINKEDIN',
      webhook_name: 'sandbox',
      user_full_name: body.full_name ?? 'Sandbox Person',
      user_provider_id: body.provider_id,
      user_public_identifier: slug,
      user_profile_url: `https://www.linkedin.com/in/${slug}/`,
      user_picture_url: null,
    };
    return { payload, delivery: await this.state.deliver(payload) };
  }

  @Post('reset')
  reset() {
    this.state.reset();
    return { reset: true };
  }
}
