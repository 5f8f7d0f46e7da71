import { Controller, Get, Param, Post, Query, Req, Res } from '@nestjs/common';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { FaultRegistry } from '../control/fault-registry.service.js';
import { type NylasMessage, NYLAS_PROVIDER, NylasStateService } from './nylas-state.service.js';

/** Default hold of a `timeout` fault, ms: longer than any send deadline. */
const DEFAULT_TIMEOUT_HOLD_MS = 30_000;

/** A Nylas v3 error body. */
const nylasError = (type: string, message: string) => ({ request_id: 'sandbox', error: { type, message } });

/**
 * The Nylas v3 stand-in (DESIGN §7): `POST /v3/grants/{grant}/messages/send` (fixtures/nylas/send-message-*)
 * and `GET /v3/grants/{grant}/messages/{id}` (with `fields=include_headers`, the headers). Faults come
 * from the shared control API (`/sandbox/control/nylas/faults`), every call is logged there.
 */
@Controller('v3/grants/:grantId/messages')
export class NylasController {
  constructor(
    private readonly faults: FaultRegistry,
    private readonly state: NylasStateService,
  ) {
    this.faults.register(NYLAS_PROVIDER);
  }

  @Post('send')
  async send(@Param('grantId') grantId: string, @Req() req: FastifyRequest, @Res() reply: FastifyReply): Promise<void> {
    const body = (req.body ?? {}) as { subject?: unknown; body?: unknown; to?: { email?: string; name?: string }[]; reply_to_message_id?: unknown; custom_headers?: unknown; tracking_options?: unknown };
    const to = Array.isArray(body.to) ? body.to : [];
    const context = { grant_id: grantId, to: String(to[0]?.email ?? ''), reply_to_message_id: typeof body.reply_to_message_id === 'string' ? body.reply_to_message_id : '' };
    if (!/^Bearer \S+/.test(String(req.headers.authorization ?? ''))) {
      this.faults.record(NYLAS_PROVIDER, { operation: 'send', context, body, outcome: 'rejected' });
      reply.status(401).send(nylasError('unauthorized', 'Unauthorized'));
      return;
    }
    if (to.length === 0 || !to.every((r) => typeof r?.email === 'string' && r.email.includes('@')) || typeof body.body !== 'string') {
      this.faults.record(NYLAS_PROVIDER, { operation: 'send', context, body, outcome: 'rejected' });
      reply.status(400).send(nylasError('invalid_request_error', 'to and body are required'));
      return;
    }
    const fault = this.faults.take(NYLAS_PROVIDER, context);
    if (fault?.kind === 'latency') await this.faults.hold(fault.latency_ms ?? 1000, (release) => req.raw.socket?.once('close', release));
    if (fault?.kind === 'error') {
      this.faults.record(NYLAS_PROVIDER, { operation: 'send', context, body, outcome: `error_${fault.status ?? 500}` });
      if (fault.retry_after !== undefined) reply.header('retry-after', String(fault.retry_after));
      reply.status(fault.status ?? 500).send(nylasError(fault.status === 429 ? 'rate_limit_error' : 'api_error', fault.message ?? 'sandbox fault'));
      return;
    }
    const deliver = fault?.kind === 'timeout' || fault?.kind === 'drop' ? fault.deliver !== false : true;
    const replied = typeof body.reply_to_message_id === 'string' && body.reply_to_message_id ? this.state.messages.get(body.reply_to_message_id) : undefined;
    const message: NylasMessage = {
      id: this.state.nextId('sb'),
      grant_id: grantId,
      thread_id: replied?.thread_id ?? this.state.nextId('th'),
      subject: typeof body.subject === 'string' ? body.subject : '',
      body: body.body,
      from: [{ email: `mailbox+${grantId}@sandbox.example` }],
      to: to.map((r) => ({ email: r.email!, ...(r.name ? { name: r.name } : {}) })),
      date: Math.floor(Date.now() / 1000),
      folders: ['SENT'],
      ...(replied ? { reply_to_message_id: replied.id } : {}),
      headers: Array.isArray(body.custom_headers) ? (body.custom_headers as { name: string; value: string }[]) : [],
    };
    if (deliver) this.state.messages.set(message.id, message);
    this.faults.record(NYLAS_PROVIDER, { operation: 'send', context, body, outcome: fault?.kind === 'timeout' || fault?.kind === 'drop' ? fault.kind : 'accepted', provider_id: deliver ? message.id : undefined });
    if (fault?.kind === 'drop') {
      req.raw.socket?.destroy();
      return;
    }
    if (fault?.kind === 'timeout') await this.faults.hold(fault.hold_ms ?? DEFAULT_TIMEOUT_HOLD_MS, (release) => req.raw.socket?.once('close', release));
    reply.status(200).send({ request_id: this.state.nextId('req'), grant_id: grantId, data: { ...message, headers: undefined } });
  }

  /**
   * `GET /v3/grants/{grant}/messages/{id}`: like Nylas, a message is found only under the grant
   * that holds it; any other grant answers 404. Faults apply to a read only when they say so
   * (`match: { operation: 'read', ... }`, also by `message_id`, `grant_id` or the sender `from`).
   */
  @Get(':messageId')
  async read(@Param('grantId') grantId: string, @Param('messageId') messageId: string, @Query('fields') fields: string | undefined, @Req() req: FastifyRequest, @Res() reply: FastifyReply): Promise<void> {
    const message = this.state.messages.get(messageId);
    const context = { operation: 'read', grant_id: grantId, message_id: messageId, fields: fields ?? '', from: message?.from[0]?.email ?? '' };
    const record = (outcome: string) => this.faults.record(NYLAS_PROVIDER, { operation: 'read', context, body: null, outcome });
    if (!/^Bearer \S+/.test(String(req.headers.authorization ?? ''))) {
      record('rejected');
      reply.status(401).send(nylasError('unauthorized', 'Unauthorized'));
      return;
    }
    const fault = this.faults.take(NYLAS_PROVIDER, context, { explicitOnly: true });
    if (fault?.kind === 'latency') await this.faults.hold(fault.latency_ms ?? 1000, (release) => req.raw.socket?.once('close', release));
    if (fault?.kind === 'error') {
      record(`error_${fault.status ?? 500}`);
      reply.status(fault.status ?? 500).send(nylasError(fault.status === 429 ? 'rate_limit_error' : 'api_error', fault.message ?? 'sandbox fault'));
      return;
    }
    if (fault?.kind === 'timeout' || fault?.kind === 'drop') {
      record(fault.kind);
      if (fault.kind === 'drop') req.raw.socket?.destroy();
      else await this.faults.hold(fault.hold_ms ?? DEFAULT_TIMEOUT_HOLD_MS, (release) => req.raw.socket?.once('close', release));
      return;
    }
    if (!message || message.grant_id !== grantId) {
      record('error_404');
      reply.status(404).send(nylasError('not_found_error', 'message not found'));
      return;
    }
    record('accepted');
    const { headers, ...rest } = message;
    reply.status(200).send({ request_id: this.state.nextId('req'), data: fields === 'include_headers' ? { ...rest, headers } : rest });
  }
}

/**
 * `GET /v3/grants/{grant_id}` of the Nylas stand-in, as Nylas answers it: the grant object
 * (`{ request_id, data: { id, grant_status, provider, email, scope, created_at, ... } }`) to its
 * application's API key; 401 `unauthorized` without a key or with one Nylas does not know; 404
 * `not_found_error` to an unknown grant or one of another application.
 */
@Controller('v3/grants')
export class NylasGrantsController {
  constructor(
    private readonly faults: FaultRegistry,
    private readonly state: NylasStateService,
  ) {}

  @Get(':grantId')
  grant(@Param('grantId') grantId: string, @Req() req: FastifyRequest, @Res() reply: FastifyReply): void {
    const context = { grant_id: grantId };
    const key = /^Bearer (\S+)$/.exec(String(req.headers.authorization ?? ''))?.[1];
    const grant = this.state.grants.get(grantId);
    const knownKey = key !== undefined && [...this.state.grants.values()].some((g) => g.api_key === key);
    if (!knownKey) {
      this.faults.record(NYLAS_PROVIDER, { operation: 'grant', context, body: null, outcome: 'rejected' });
      reply.status(401).send(nylasError('unauthorized', 'Unauthorized'));
      return;
    }
    if (!grant || grant.api_key !== key) {
      this.faults.record(NYLAS_PROVIDER, { operation: 'grant', context, body: null, outcome: 'not_found' });
      reply.status(404).send(nylasError('not_found_error', `grant ${grantId} not found`));
      return;
    }
    this.faults.record(NYLAS_PROVIDER, { operation: 'grant', context, body: null, outcome: 'accepted', provider_id: grant.id });
    reply.status(200).send({
      request_id: this.state.nextId('req'),
      data: {
        id: grant.id,
        grant_status: 'valid',
        provider: grant.provider,
        email: grant.email,
        scope: ['https://www.googleapis.com/auth/gmail.send', 'https://www.googleapis.com/auth/gmail.readonly'],
        created_at: grant.created_at,
        updated_at: grant.created_at,
      },
    });
  }
}
