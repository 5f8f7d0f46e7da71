import { Controller, Get, NotFoundException, Param, Post, Query, Req, Res } from '@nestjs/common';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { type Fault, FaultRegistry } from '../control/fault-registry.service.js';
import { MetaWebhooksService } from './meta-webhooks.service.js';
import { MetaNumbersService } from './meta-numbers.service.js';
import { MetaServiceWindowService } from './meta-service-window.service.js';
import { defaultStatusOf, graphError, graphExpiredToken, graphInvalidToken, graphObjectNotReadable, makeWamid, messageBodyProblems, templateParameterRefusal } from './whatsapp-graph.js';

/** Name of the Meta fault queue and request log in the control API. */
export const META_PROVIDER = 'meta';
/** Meta's refusal of a free-form message outside the customer-service window (error-codes page). */
const RE_ENGAGEMENT_CODE = 131047;
const RE_ENGAGEMENT_DETAILS = 'Message failed to send because more than 24 hours have passed since the customer last replied to this number.';
/** Default hold of a `timeout` fault, ms: longer than any send deadline the dispatcher uses. */
const DEFAULT_TIMEOUT_HOLD_MS = 30_000;

/**
 * The WhatsApp Cloud API stand-in (DESIGN §7): `POST /{version}/{phone_number_id}/messages` and
 * `/media`, answering like Graph — a wamid on success (fixtures/meta/send-response.json), an error
 * body with `error.code` (fixtures/meta/error-*.json) and `Retry-After` on a scripted error — and
 * firing signed status webhooks that echo `biz_opaque_callback_data`. With the `service_window`
 * setting on, anything but a template to a person whose 24-hour window is closed gets 131047.
 */
@Controller()
export class MetaController {
  private seq = 0;
  private mediaSeq = 0;

  constructor(
    private readonly faults: FaultRegistry,
    private readonly webhooks: MetaWebhooksService,
    private readonly numbers: MetaNumbersService,
    private readonly windows: MetaServiceWindowService,
  ) {
    this.faults.register(META_PROVIDER);
  }

  /**
   * A business number read, `GET /{version}/{phone_number_id}?fields=...`, as Graph answers it:
   * `{ id, display_phone_number, verified_name, quality_rating }` to the number's own token; 401
   * code 190 to a token Graph does not know; 400 code 100 subcode 33 (one body for both) to an
   * unknown id or a token of another business. Scripted faults are for sends and never apply here.
   */
  @Get(':version/:phoneNumberId')
  phoneNumber(@Param('version') version: string, @Param('phoneNumberId') phoneNumberId: string, @Query('fields') fields: string | undefined, @Req() req: FastifyRequest, @Res() reply: FastifyReply): void {
    if (!/^v\d+\.\d+$/.test(version)) throw new NotFoundException();
    const context = { version, phone_number_id: phoneNumberId, fields: fields ?? '', type: 'phone_number' };
    const token = /^Bearer (\S+)$/.exec(String(req.headers.authorization ?? ''))?.[1];
    if (token && this.numbers.isExpired(token)) {
      this.faults.record(META_PROVIDER, { operation: 'phone_number', context, body: null, outcome: 'error_190' });
      reply.status(401).send(graphExpiredToken());
      return;
    }
    if (!token || !this.numbers.knowsToken(token)) {
      this.faults.record(META_PROVIDER, { operation: 'phone_number', context, body: null, outcome: 'rejected' });
      reply.status(401).send(graphInvalidToken());
      return;
    }
    const number = this.numbers.readable(phoneNumberId, token);
    if (!number) {
      this.faults.record(META_PROVIDER, { operation: 'phone_number', context, body: null, outcome: 'not_readable' });
      reply.status(400).send(graphObjectNotReadable(phoneNumberId));
      return;
    }
    this.faults.record(META_PROVIDER, { operation: 'phone_number', context, body: null, outcome: 'accepted', provider_id: number.id });
    reply.status(200).send({ verified_name: number.verified_name, display_phone_number: number.display_phone_number, id: number.id, quality_rating: 'GREEN' });
  }

  @Post(':version/:phoneNumberId/messages')
  async messages(@Param('version') version: string, @Param('phoneNumberId') phoneNumberId: string, @Req() req: FastifyRequest, @Res() reply: FastifyReply): Promise<void> {
    const body = req.body as Record<string, unknown> | undefined;
    const isRead = body?.status === 'read';
    const to = typeof body?.to === 'string' ? body.to : '';
    const callbackData = typeof body?.biz_opaque_callback_data === 'string' ? body.biz_opaque_callback_data : null;
    const context: Record<string, string> = {
      version,
      phone_number_id: phoneNumberId,
      to,
      wa_id: to.replace(/\D/g, ''),
      type: isRead ? 'read' : String(body?.type ?? 'text'),
      biz_opaque_callback_data: callbackData ?? '',
      // A read receipt names no recipient, only the inbound message it marks read.
      message_id: isRead && typeof body?.message_id === 'string' ? body.message_id : '',
      // The wamid a contextual reply quotes.
      context_message_id: typeof (body?.context as { message_id?: unknown } | undefined)?.message_id === 'string' ? (body!.context as { message_id: string }).message_id : '',
    };
    if (!/^v\d+\.\d+$/.test(version) || !/^\d+$/.test(phoneNumberId)) {
      this.faults.record(META_PROVIDER, { operation: 'messages', context, body, outcome: 'rejected' });
      reply.status(400).send(graphError(100, 'Unsupported post request'));
      return;
    }
    const auth = req.headers.authorization;
    if (typeof auth !== 'string' || !/^Bearer \S+/.test(auth)) {
      this.faults.record(META_PROVIDER, { operation: 'messages', context, body, outcome: 'rejected' });
      reply.status(401).send(graphError(190));
      return;
    }
    if (this.numbers.isExpired(auth.slice('Bearer '.length).trim())) {
      this.faults.record(META_PROVIDER, { operation: 'messages', context, body, outcome: 'error_190' });
      reply.status(401).send(graphExpiredToken());
      return;
    }
    const problems = messageBodyProblems(body);
    if (problems.length) {
      this.faults.record(META_PROVIDER, { operation: 'messages', context, body, outcome: 'rejected' });
      reply.status(400).send(graphError(100, 'Invalid parameter', problems.join('; ')));
      return;
    }
    const refusal = templateParameterRefusal(body);
    if (refusal) {
      this.faults.record(META_PROVIDER, { operation: 'messages', context, body, outcome: `error_${refusal.code}` });
      reply.status(400).send(graphError(refusal.code, undefined, refusal.details));
      return;
    }

    if (this.webhooks.settings.service_window && !isRead && context.type !== 'template' && !this.windows.isOpen(phoneNumberId, context.wa_id, Date.now())) {
      // Meta's policy, before any scripted fault: outside the window only a template may go.
      this.faults.record(META_PROVIDER, { operation: 'messages', context, body, outcome: `error_${RE_ENGAGEMENT_CODE}` });
      reply.status(400).send(graphError(RE_ENGAGEMENT_CODE, undefined, RE_ENGAGEMENT_DETAILS));
      return;
    }

    const fault = this.faults.take(META_PROVIDER, context);
    if (fault?.kind === 'latency') await this.faults.hold(fault.latency_ms ?? 1000, (release) => req.raw.socket?.once('close', release));
    if (fault?.kind === 'error') {
      const code = fault.code ?? 131000;
      this.faults.record(META_PROVIDER, { operation: 'messages', context, body, outcome: `error_${code}` });
      if (fault.retry_after !== undefined) reply.header('retry-after', String(fault.retry_after));
      reply.status(fault.status ?? defaultStatusOf(fault.code)).send(graphError(code, fault.message, fault.details, fault.subcode));
      return;
    }

    const deliver = fault?.kind !== 'timeout' && fault?.kind !== 'drop' ? true : fault.deliver !== false;
    const seq = ++this.seq;
    const wamid = deliver ? makeWamid(seq, context.wa_id || phoneNumberId) : undefined;
    this.faults.record(META_PROVIDER, { operation: 'messages', context, body, outcome: fault?.kind === 'timeout' || fault?.kind === 'drop' ? fault.kind : 'accepted', provider_id: wamid });
    if (wamid && !isRead) this.webhooks.scheduleStatuses(phoneNumberId, wamid, context.wa_id, callbackData);
    const answer = isRead ? { success: true } : { messaging_product: 'whatsapp', contacts: [{ input: to, wa_id: context.wa_id }], messages: [{ id: wamid ?? makeWamid(seq, 'lost') }] };

    if (fault?.kind === 'drop') {
      // Took it, then the connection breaks before any answer: the client cannot know.
      req.raw.socket?.destroy();
      return;
    }
    if (fault?.kind === 'timeout') {
      await this.holdThenMaybeAnswer(fault, req, reply, answer);
      return;
    }
    reply.status(200).send(answer);
  }

  /** Media upload (multipart/form-data): answers `{ id }`. */
  @Post(':version/:phoneNumberId/media')
  async media(@Param('phoneNumberId') phoneNumberId: string, @Req() req: FastifyRequest, @Res() reply: FastifyReply): Promise<void> {
    const context = { phone_number_id: phoneNumberId, type: 'media' };
    const auth = req.headers.authorization;
    const raw = Buffer.isBuffer(req.body) ? req.body : Buffer.from(typeof req.body === 'string' ? req.body : JSON.stringify(req.body ?? ''));
    if (typeof auth !== 'string' || !/^Bearer \S+/.test(auth)) {
      this.faults.record(META_PROVIDER, { operation: 'media', context, body: { bytes: raw.length }, outcome: 'rejected' });
      reply.status(401).send(graphError(190));
      return;
    }
    if (!raw.includes('name="messaging_product"') || !raw.includes('name="file"')) {
      this.faults.record(META_PROVIDER, { operation: 'media', context, body: { bytes: raw.length }, outcome: 'rejected' });
      reply.status(400).send(graphError(100, 'Invalid parameter', 'messaging_product and file are required'));
      return;
    }
    const fault = this.faults.take(META_PROVIDER, context);
    if (fault?.kind === 'latency') await this.faults.hold(fault.latency_ms ?? 1000);
    if (fault?.kind === 'error') {
      const code = fault.code ?? 131000;
      this.faults.record(META_PROVIDER, { operation: 'media', context, body: { bytes: raw.length }, outcome: `error_${code}` });
      if (fault.retry_after !== undefined) reply.header('retry-after', String(fault.retry_after));
      reply.status(fault.status ?? defaultStatusOf(fault.code)).send(graphError(code, fault.message, fault.details, fault.subcode));
      return;
    }
    const id = String(9_000_000_000_000_000 + ++this.mediaSeq);
    this.faults.record(META_PROVIDER, { operation: 'media', context, body: { bytes: raw.length }, outcome: fault ? fault.kind : 'accepted', provider_id: id });
    if (fault?.kind === 'drop') {
      req.raw.socket?.destroy();
      return;
    }
    if (fault?.kind === 'timeout') {
      await this.holdThenMaybeAnswer(fault, req, reply, { id });
      return;
    }
    reply.status(200).send({ id });
  }

  private async holdThenMaybeAnswer(fault: Fault, req: FastifyRequest, reply: FastifyReply, answer: unknown): Promise<void> {
    let gone = false;
    await this.faults.hold(fault.hold_ms ?? DEFAULT_TIMEOUT_HOLD_MS, (release) =>
      req.raw.socket?.once('close', () => {
        gone = true;
        release();
      }),
    );
    if (!gone && !reply.sent) reply.status(200).send(answer);
  }
}
