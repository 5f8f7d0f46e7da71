import { Controller, Get, Headers, Inject, Query, Req, Res } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { MessagingRpc, type MessagingStreamPage, Scope } from '@touchpoint/contracts';
import type { Logger } from '@touchpoint/observability';
import { LOGGER } from '@touchpoint/runtime';
import { type Caller, CurrentCaller, RequireKey } from '../auth/auth.decorators.js';
import { ServiceForwarder } from '../forwarding/service-forwarder.js';
import { ApiErrorResponses } from '../http/openapi.js';
import { StreamQuery } from './dto/messaging.dto.js';

/** How often an open stream asks messaging for new items, ms. */
export const STREAM_POLL_MS = 300;
/** A comment line keeps proxies from closing an idle stream, ms. */
export const STREAM_HEARTBEAT_MS = 15_000;

/**
 * `GET /events/stream`: Server-Sent Events of the caller's organization — new
 * messages, status changes, conversation and instance changes, notifications and abuse actions —
 * as they commit. Each event's `id` is its feed id: a client reconnecting with `Last-Event-ID`
 * gets what it missed within the retention window; an `event: reset` says it missed too much.
 */
@ApiTags('events')
@Controller('events')
export class EventsStreamController {
  constructor(
    private readonly forwarder: ServiceForwarder,
    @Inject(LOGGER) private readonly logger: Logger,
  ) {}

  @Get('stream')
  @RequireKey({ scopes: [Scope.MessagingRead] })
  @ApiOperation({ summary: 'Real-time events of the organization (text/event-stream), resumable with Last-Event-ID' })
  @ApiOkResponse({
    description: 'An open Server-Sent Events stream: each event has `id` (its feed id), `event` (the type) and `data` (the event data as JSON, with `occurred_at`); `event: reset` when the client missed more than the retention window',
    content: {
      'text/event-stream': {
        schema: { type: 'string' },
        example: 'id: 1042\nevent: messaging.message.received\ndata: {"message_id":"a4b3c2d1-e5f6-4a7b-8c9d-0e1f2a3b4c5d","occurred_at":"2026-03-02T14:05:00.000Z"}\n\n',
      },
    },
  })
  @ApiErrorResponses(400, 503)
  async stream(@CurrentCaller() caller: Caller, @Query() query: StreamQuery, @Headers('last-event-id') lastEventId: string | undefined, @Req() request: FastifyRequest, @Res() reply: FastifyReply): Promise<void> {
    const types = (query.types ?? '')
      .split(',')
      .map((t) => t.trim())
      .filter(Boolean);
    const resumeFrom = lastEventId ?? query.last_event_id ?? null;
    // The first read happens before the stream opens, so a broken messaging answers 503 as JSON.
    let page = await this.forwarder.forward(caller, 'messaging', MessagingRpc.StreamRead, { after: resumeFrom, types });
    reply.hijack();
    const raw = reply.raw;
    raw.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache, no-transform', connection: 'keep-alive', 'x-accel-buffering': 'no', 'x-request-id': String(request.id) });
    raw.write(`retry: 2000\n\n`);
    let open = true;
    request.raw.on('close', () => (open = false));
    let lastBeat = Date.now();
    let cursor: MessagingStreamPage['cursor'];
    while (open) {
      if (page.reset) raw.write(`event: reset\ndata: {}\n\n`);
      for (const item of page.items) raw.write(`id: ${item.id}\nevent: ${item.type}\ndata: ${JSON.stringify({ ...item.data, occurred_at: item.occurred_at })}\n\n`);
      cursor = page.cursor;
      if (page.items.length === 0) {
        if (Date.now() - lastBeat >= STREAM_HEARTBEAT_MS) {
          raw.write(`: keep-alive\n\n`);
          lastBeat = Date.now();
        }
        await new Promise((r) => setTimeout(r, STREAM_POLL_MS));
      }
      if (!open) break;
      try {
        page = await this.forwarder.forward(caller, 'messaging', MessagingRpc.StreamRead, { after: cursor, types });
      } catch (err) {
        this.logger.warn({ event: 'gateway.stream_read_failed', organization_id: caller.organizationId, err: (err as Error).message }, 'stream read failed; retrying');
        page = { items: [], cursor, reset: false };
        await new Promise((r) => setTimeout(r, 1000));
      }
    }
    raw.end();
  }
}
