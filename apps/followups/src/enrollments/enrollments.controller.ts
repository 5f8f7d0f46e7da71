import { Controller } from '@nestjs/common';
import { Payload } from '@nestjs/microservices';
import { type CursorPage, type DataEnvelope, type EnrollmentControlData, type EnrollmentCreateData, type EnrollmentDetailView, type EnrollmentListData, type FollowupEnrollmentRef, type FollowupEnrollmentView, FollowupsRpc } from '@touchpoint/contracts';
import { OwnedReferences, OnRpc } from '@touchpoint/runtime';
import { EnrollmentsService } from './enrollments.service.js';

/** RPC edge of enrollments (seed 002 "Inscrições"). */
@Controller()
export class EnrollmentsController {
  constructor(
    private readonly enrollments: EnrollmentsService,
    private readonly references: OwnedReferences,
  ) {}

  @OnRpc(FollowupsRpc.EnrollmentList)
  async list(@Payload() input: EnrollmentListData): Promise<DataEnvelope<CursorPage<FollowupEnrollmentView>>> {
    return { data: await this.enrollments.list(input) };
  }

  /**
   * `{data: enrollment, created}`: `created` is false when the operation key had one already. The
   * contact, conversation and sender must be the caller's (404 otherwise, as for an unknown id).
   */
  @OnRpc(FollowupsRpc.EnrollmentCreate)
  async create(@Payload() input: EnrollmentCreateData): Promise<DataEnvelope<FollowupEnrollmentView> & { created: boolean }> {
    await this.references.require(input?.organization_id, [
      { field: 'contact_id', kind: 'contact', id: input?.contact_id },
      { field: 'conversation_id', kind: 'conversation', id: input?.conversation_id },
      { field: 'sender_id', kind: 'sender', id: input?.sender_id },
    ]);
    const { enrollment, created } = await this.enrollments.create(input);
    return { data: enrollment, created };
  }

  @OnRpc(FollowupsRpc.EnrollmentGet)
  async get(@Payload() input: FollowupEnrollmentRef): Promise<DataEnvelope<EnrollmentDetailView>> {
    return { data: await this.enrollments.get(input) };
  }

  @OnRpc(FollowupsRpc.EnrollmentControl)
  async control(@Payload() input: EnrollmentControlData): Promise<DataEnvelope<FollowupEnrollmentView>> {
    return { data: await this.enrollments.control(input) };
  }
}
