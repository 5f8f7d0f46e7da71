import { Controller } from '@nestjs/common';
import { Payload } from '@nestjs/microservices';
import { type ActionApproveData, type ActionRejectData, OutreachRpc, type ReviewQueueQuery } from '@touchpoint/contracts';
import { OnRpc } from '@touchpoint/runtime';
import { ReviewService } from './review.service.js';

/** RPC edge of the review queue (the gateway routes and the CLI commands call these). */
@Controller()
export class ReviewController {
  constructor(private readonly review: ReviewService) {}

  @OnRpc(OutreachRpc.ActionList)
  list(@Payload() data: ReviewQueueQuery) {
    return this.review.queue(data);
  }

  @OnRpc(OutreachRpc.ActionApprove)
  approve(@Payload() data: ActionApproveData) {
    return this.review.approve(data);
  }

  @OnRpc(OutreachRpc.ActionReject)
  reject(@Payload() data: ActionRejectData) {
    return this.review.reject(data);
  }
}
