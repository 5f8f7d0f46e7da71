import { Controller } from '@nestjs/common';
import { Payload } from '@nestjs/microservices';
import { MessagingRpc, type MessagingStreamPage, type MessagingStreamReadData } from '@touchpoint/contracts';
import { UnitOfWork, OnRpc } from '@touchpoint/runtime';
import { pageSize } from '@touchpoint/database';
import { StreamRepository } from './stream.repository.js';

/**
 * RPC edge of the real-time feed: the gateway's SSE route polls it with the last id it sent.
 * A client with no id starts at the newest item; an id older than the retention window comes back
 * with `reset: true` (it missed items) and continues from the oldest kept.
 */
@Controller()
export class StreamController {
  constructor(
    private readonly uow: UnitOfWork,
    private readonly stream: StreamRepository,
  ) {}

  @OnRpc(MessagingRpc.StreamRead)
  read(@Payload() data: MessagingStreamReadData): Promise<MessagingStreamPage> {
    const limit = pageSize(data.limit, 500, 200);
    return this.uow.run(async (tx) => {
      const after = data.after && /^\d+$/.test(data.after) ? data.after : null;
      if (after === null) return { items: [], cursor: await this.stream.latestId(tx), reset: false };
      const oldest = await this.stream.oldestId(tx);
      const reset = oldest !== null && BigInt(after) + 1n < BigInt(oldest);
      const items = await this.stream.readAfter(tx, data.organization_id, after, data.types ?? [], limit);
      return { items, cursor: items.length ? items[items.length - 1].id : after, reset };
    });
  }
}
