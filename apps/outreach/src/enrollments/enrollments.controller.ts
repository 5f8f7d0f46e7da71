import { Controller } from '@nestjs/common';
import { Payload } from '@nestjs/microservices';
import { type EnrollBatchData, type OutreachEnrollmentListQuery, type OutreachEnrollmentRef, type EnrollOneData, OutreachRpc } from '@touchpoint/contracts';
import { OnRpc } from '@touchpoint/runtime';
import { TimelineService } from '../timeline/timeline.service.js';
import { EnrollmentsService } from './enrollments.service.js';

/** RPC edge of enrollments. */
@Controller()
export class EnrollmentsController {
  constructor(
    private readonly enrollments: EnrollmentsService,
    private readonly timeline: TimelineService,
  ) {}

  @OnRpc(OutreachRpc.EnrollOne)
  enrollOne(@Payload() data: EnrollOneData) {
    return this.enrollments.enrollOne(data);
  }

  @OnRpc(OutreachRpc.EnrollBatch)
  enrollBatch(@Payload() data: EnrollBatchData) {
    return this.enrollments.enroll(data);
  }

  @OnRpc(OutreachRpc.EnrollmentGet)
  get(@Payload() data: OutreachEnrollmentRef) {
    return this.enrollments.get(data.organization_id, data.enrollment_id);
  }

  @OnRpc(OutreachRpc.EnrollmentList)
  list(@Payload() data: OutreachEnrollmentListQuery) {
    return this.enrollments.list(data);
  }

  @OnRpc(OutreachRpc.EnrollmentExit)
  exit(@Payload() data: OutreachEnrollmentRef) {
    return this.enrollments.exit(data.organization_id, data.enrollment_id);
  }

  @OnRpc(OutreachRpc.EnrollmentManualRetry)
  manualRetry(@Payload() data: OutreachEnrollmentRef) {
    return this.enrollments.manualRetry(data.organization_id, data.enrollment_id);
  }

  @OnRpc(OutreachRpc.EnrollmentTimeline)
  timelineOf(@Payload() data: OutreachEnrollmentRef) {
    return this.timeline.of(data.organization_id, data.enrollment_id);
  }
}
