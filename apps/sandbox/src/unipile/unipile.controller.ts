import { Controller, Get, Param, Post, Query, Req, Res } from '@nestjs/common';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { FaultRegistry } from '../control/fault-registry.service.js';
import { UNIPILE_PROVIDER, UnipileStateService } from './unipile-state.service.js';

const DEFAULT_TIMEOUT_HOLD_MS = 30_000;

/** A Unipile error body (RFC 7807 shape, developer.unipile.com "Error responses"). */
const unipileError = (status: number, type: string, title: string) => ({ object: 'Error', status, type, title, detail: title });

/**
 * The Unipile API v1 stand-in (DESIGN §7): `POST /api/v1/users/invite` (JSON), `POST /api/v1/chats`
 * and `POST /api/v1/chats/{chat_id}/messages` (multipart form, as documented; JSON accepted too),
 * each with `X-API-KEY`, answering the fixtures' shapes. An invitation to a connected person answers
 * 422 `errors/already_connected`; to a held one 422 `errors/cannot_resend_yet`.
 */
@Controller('api/v1')
export class UnipileController {
  constructor(
    private readonly faults: FaultRegistry,
    private readonly state: UnipileStateService,
  ) {
    this.faults.register(UNIPILE_PROVIDER);
  }

  /**
   * An account, `GET /api/v1/accounts/{account_id}`, as Unipile answers it (`object: "Account"`,
   * `type`, `id`, `name`, `connection_params.im`, `sources`) to the workspace's key; 401
   * `errors/missing_credentials` without a key, `errors/invalid_credentials` with one it does not
   * know; 404 `errors/resource_not_found` to an unknown account or one of another workspace.
   */
  @Get('accounts/:accountId')
  account(@Param('accountId') accountId: string, @Req() req: FastifyRequest, @Res() reply: FastifyReply): void {
    const context = { operation: 'account', account_id: accountId };
    const key = req.headers['x-api-key'];
    if (typeof key !== 'string' || key === '') {
      this.faults.record(UNIPILE_PROVIDER, { operation: 'account', context, body: null, outcome: 'rejected' });
      reply.status(401).send(unipileError(401, 'errors/missing_credentials', 'Missing X-API-KEY.'));
      return;
    }
    if (![...this.state.accounts.values()].some((a) => a.api_key === key)) {
      this.faults.record(UNIPILE_PROVIDER, { operation: 'account', context, body: null, outcome: 'rejected' });
      reply.status(401).send(unipileError(401, 'errors/invalid_credentials', 'The provided credentials are invalid.'));
      return;
    }
    const account = this.state.accounts.get(accountId);
    if (!account || account.api_key !== key) {
      this.faults.record(UNIPILE_PROVIDER, { operation: 'account', context, body: null, outcome: 'not_found' });
      reply.status(404).send(unipileError(404, 'errors/resource_not_found', 'Account not found.'));
      return;
    }
    this.faults.record(UNIPILE_PROVIDER, { operation: 'account', context, body: null, outcome: 'accepted', provider_id: account.id });
    const userId = this.state.settings.account_users[account.id] ?? 'ACoAASANDBOXACCOUNT';
    reply.status(200).send({
      object: 'Account',
      type: 'LINKEDIN',
      id: account.id,
      name: account.name,
      created_at: account.created_at,
      connection_params: { im: { id: userId, publicIdentifier: 'sandbox-account', username: account.name } },
      sources: [{ id: `${account.id}_MESSAGING`, status: 'OK' }],
    });
  }

  /** A profile by public identifier: a deterministic member id per slug (or the one set through the control API). */
  @Get('users/:identifier')
  profile(@Param('identifier') identifier: string, @Query('account_id') accountId: string | undefined, @Req() req: FastifyRequest, @Res() reply: FastifyReply): void {
    const context = { operation: 'profile', account_id: accountId ?? '', identifier };
    if (typeof req.headers['x-api-key'] !== 'string' || req.headers['x-api-key'] === '') {
      this.faults.record(UNIPILE_PROVIDER, { operation: 'profile', context, body: null, outcome: 'rejected' });
      reply.status(401).send(unipileError(401, 'errors/missing_credentials', 'Missing X-API-KEY.'));
      return;
    }
    const providerId = this.state.profiles.get(identifier.toLowerCase());
    this.faults.record(UNIPILE_PROVIDER, { operation: 'profile', context, body: null, outcome: providerId ? 'accepted' : 'not_found', provider_id: providerId });
    if (!providerId) {
      reply.status(404).send(unipileError(404, 'errors/resource_not_found', 'Profile not found.'));
      return;
    }
    reply.status(200).send({ object: 'UserProfile', provider: 'LINKEDIN', provider_id: providerId, public_identifier: identifier });
  }

  @Post('users/invite')
  async invite(@Req() req: FastifyRequest, @Res() reply: FastifyReply): Promise<void> {
    const body = (await fieldsOf(req)) as { provider_id?: string; account_id?: string; message?: string };
    const context = { operation: 'invite', account_id: String(body.account_id ?? ''), provider_id: String(body.provider_id ?? '') };
    if (!(await this.gate(req, reply, context, body, !!body.provider_id && !!body.account_id))) return;
    const relation = this.state.relations.get(`${body.account_id}|${body.provider_id}`);
    if (relation) {
      const [type, title] = relation === 'connected' ? ['errors/already_connected', 'The user is already a relation.'] : ['errors/cannot_resend_yet', 'An invitation was sent recently; it cannot be sent again yet.'];
      this.faults.record(UNIPILE_PROVIDER, { operation: 'invite', context, body, outcome: `refused_${relation}` });
      reply.status(422).send(unipileError(422, type, title));
      return;
    }
    const invitationId = this.state.nextId('inv');
    await this.answer(req, reply, context, body, invitationId, { object: 'UserInvitationSent', invitation_id: invitationId, usage: 0 });
    this.state.relations.set(`${body.account_id}|${body.provider_id}`, 'held');
  }

  @Post('chats')
  async startChat(@Req() req: FastifyRequest, @Res() reply: FastifyReply): Promise<void> {
    const body = (await fieldsOf(req)) as { account_id?: string; text?: string; attendees_ids?: string | string[] };
    const attendee = Array.isArray(body.attendees_ids) ? body.attendees_ids[0] : body.attendees_ids;
    const context = { operation: 'chat', account_id: String(body.account_id ?? ''), provider_id: String(attendee ?? '') };
    if (!(await this.gate(req, reply, context, body, !!body.account_id && !!attendee && !!body.text))) return;
    const chatId = this.state.nextId('chat');
    const messageId = this.state.nextId('msg');
    this.state.chats.set(chatId, { account_id: body.account_id!, provider_id: attendee! });
    await this.answer(req, reply, context, body, messageId, { object: 'ChatStarted', chat_id: chatId, message_id: messageId });
  }

  @Post('chats/:chatId/messages')
  async message(@Param('chatId') chatId: string, @Req() req: FastifyRequest, @Res() reply: FastifyReply): Promise<void> {
    const body = (await fieldsOf(req)) as { text?: string };
    const chat = this.state.chats.get(chatId);
    const context = { operation: 'message', chat_id: chatId, account_id: chat?.account_id ?? '', provider_id: chat?.provider_id ?? '' };
    if (!(await this.gate(req, reply, context, body, !!body.text))) return;
    if (!chat) {
      this.faults.record(UNIPILE_PROVIDER, { operation: 'message', context, body, outcome: 'rejected' });
      reply.status(404).send(unipileError(404, 'errors/resource_not_found', 'Chat not found.'));
      return;
    }
    const messageId = this.state.nextId('msg');
    await this.answer(req, reply, context, body, messageId, { object: 'MessageSent', message_id: messageId });
  }

  /** Auth, shape and scripted faults; false when the call was answered here. */
  private async gate(req: FastifyRequest, reply: FastifyReply, context: Record<string, string>, body: unknown, valid: boolean): Promise<boolean> {
    if (typeof req.headers['x-api-key'] !== 'string' || req.headers['x-api-key'] === '') {
      this.faults.record(UNIPILE_PROVIDER, { operation: context.operation!, context, body, outcome: 'rejected' });
      reply.status(401).send(unipileError(401, 'errors/missing_credentials', 'Missing X-API-KEY.'));
      return false;
    }
    if (!valid) {
      this.faults.record(UNIPILE_PROVIDER, { operation: context.operation!, context, body, outcome: 'rejected' });
      reply.status(400).send(unipileError(400, 'errors/invalid_parameters', 'Missing parameters.'));
      return false;
    }
    const fault = this.faults.take(UNIPILE_PROVIDER, context);
    if (!fault) return true;
    if (fault.kind === 'latency') {
      await this.faults.hold(fault.latency_ms ?? 1000, (release) => req.raw.socket?.once('close', release));
      return true;
    }
    if (fault.kind === 'error') {
      this.faults.record(UNIPILE_PROVIDER, { operation: context.operation!, context, body, outcome: `error_${fault.status ?? 500}` });
      reply.status(fault.status ?? 500).send(unipileError(fault.status ?? 500, fault.message ?? 'errors/unexpected_error', 'sandbox fault'));
      return false;
    }
    (req as { sandboxFault?: unknown }).sandboxFault = fault;
    return true;
  }

  private async answer(req: FastifyRequest, reply: FastifyReply, context: Record<string, string>, body: unknown, providerId: string, answer: unknown): Promise<void> {
    const fault = (req as { sandboxFault?: { kind: string; hold_ms?: number } }).sandboxFault;
    this.faults.record(UNIPILE_PROVIDER, { operation: context.operation!, context, body, outcome: fault?.kind ?? 'accepted', provider_id: providerId });
    if (fault?.kind === 'drop') {
      req.raw.socket?.destroy();
      return;
    }
    if (fault?.kind === 'timeout') await this.faults.hold(fault.hold_ms ?? DEFAULT_TIMEOUT_HOLD_MS, (release) => req.raw.socket?.once('close', release));
    reply.status(201).send(answer);
  }
}

/** The request's fields: a JSON body as is, a multipart body parsed (repeated fields become lists). */
async function fieldsOf(req: FastifyRequest): Promise<Record<string, unknown>> {
  const type = String(req.headers['content-type'] ?? '');
  if (!type.startsWith('multipart/form-data')) return (req.body ?? {}) as Record<string, unknown>;
  const raw = Buffer.isBuffer(req.body) ? req.body : Buffer.from(String(req.body ?? ''));
  const form = await new Response(new Uint8Array(raw), { headers: { 'content-type': type } }).formData();
  const out: Record<string, unknown> = {};
  for (const key of new Set(form.keys())) {
    const values = form.getAll(key).map((v) => String(v));
    out[key] = values.length > 1 ? values : values[0];
  }
  return out;
}
