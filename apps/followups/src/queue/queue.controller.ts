import { Controller } from '@nestjs/common';
import { Payload } from '@nestjs/microservices';
import { type CursorPage, type DataEnvelope, FollowupsRpc, type QueueItemView, type QueueListData } from '@touchpoint/contracts';
import { OnRpc } from '@touchpoint/runtime';
import { QueueService } from './queue.service.js';

/** RPC edge of the queue: `{data: {data: [...], next_cursor}}` exactly as seed 002 shows it. */
@Controller()
export class QueueController {
  constructor(private readonly queue: QueueService) {}

  @OnRpc(FollowupsRpc.QueueList)
  async list(@Payload() input: QueueListData): Promise<DataEnvelope<CursorPage<QueueItemView>>> {
    return { data: await this.queue.list(input) };
  }
}
